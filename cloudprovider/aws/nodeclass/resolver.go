package nodeclass

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/clock"
)

// KubernetesVersionFunc returns the cluster's Kubernetes minor version, e.g. "1.33"; AMI
// aliases resolve to the images built for it.
type KubernetesVersionFunc func(ctx context.Context) (string, error)

// Options configure a Resolver.
type Options struct {
	// ClusterName names the cluster in managed instance profiles' names and tags.
	ClusterName string
	// Region is the AWS region the clients talk to.
	Region string
	// KubernetesVersion is the cluster's version; required for alias terms.
	KubernetesVersion KubernetesVersionFunc
	// Clock judges AMI deprecation and reservation expiry; the real clock if nil.
	Clock clock.PassiveClock
}

// Resolver resolves EC2NodeClasses against AWS.
type Resolver struct {
	ec2  EC2API
	ssm  SSMAPI
	iam  IAMAPI
	opts Options
}

// New returns a Resolver over the given clients.
func New(ec2Client EC2API, ssmClient SSMAPI, iamClient IAMAPI, opts Options) (*Resolver, error) {
	if opts.ClusterName == "" || opts.Region == "" {
		return nil, errors.New("nodeclass: ClusterName and Region are required")
	}
	if opts.KubernetesVersion == nil {
		return nil, errors.New("nodeclass: KubernetesVersion is required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Resolver{ec2: ec2Client, ssm: ssmClient, iam: iamClient, opts: opts}, nil
}

func (r *Resolver) now() time.Time { return r.opts.Clock.Now() }

// StaticKubernetesVersion always answers version.
func StaticKubernetesVersion(version string) KubernetesVersionFunc {
	return func(context.Context) (string, error) { return version, nil }
}

// DiscoveryKubernetesVersion asks the API server for its version through discovery, as
// "major.minor" ("1.33+" on some distributions becomes "1.33").
func DiscoveryKubernetesVersion(client discovery.ServerVersionInterface) KubernetesVersionFunc {
	return func(context.Context) (string, error) {
		info, err := client.ServerVersion()
		if err != nil {
			return "", fmt.Errorf("getting the API server's version: %w", err)
		}
		minor := strings.TrimRight(info.Minor, "+")
		if info.Major == "" || minor == "" {
			return "", fmt.Errorf("the API server reports no usable version (%q.%q)", info.Major, info.Minor)
		}
		return info.Major + "." + minor, nil
	}
}

// NewFromConfig returns a Resolver using SDK clients built from cfg.
func NewFromConfig(cfg aws.Config, opts Options) (*Resolver, error) {
	return New(ec2.NewFromConfig(cfg), ssm.NewFromConfig(cfg), iam.NewFromConfig(cfg), opts)
}
