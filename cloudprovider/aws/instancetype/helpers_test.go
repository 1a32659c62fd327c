package instancetype_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/aws/instancetype"
	"github.com/joinery-dev/joinery/cloudprovider/aws/pricing"
	"github.com/joinery-dev/joinery/internal/awsemulator"
)

// noBackoff keeps the SDK's retry decisions and attempt count but not its sleeps.
type noBackoff struct{ aws.Retryer }

func (noBackoff) RetryDelay(int, error) (time.Duration, error) { return 0, nil }

// env is an emulator with the real SDK clients, a refreshed price provider and an
// instance-type provider over them.
type env struct {
	srv    *awsemulator.Server
	cfg    aws.Config
	ec2    *ec2.Client
	prices *pricing.Provider
}

func newEnv(tb testing.TB) *env {
	tb.Helper()
	srv := awsemulator.NewServer(awsemulator.Options{Region: "us-west-2"})
	tb.Cleanup(srv.Close)
	cfg := srv.Config()
	ec2Client := ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.Retryer = noBackoff{o.Retryer} })
	pricingClient := awspricing.NewFromConfig(cfg, func(o *awspricing.Options) { o.Retryer = noBackoff{o.Retryer} })
	prices := pricing.New(pricingClient, ec2Client, pricing.Options{Region: srv.Region, Logger: logr.Discard()})
	if err := prices.Refresh(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return &env{srv: srv, cfg: cfg, ec2: ec2Client, prices: prices}
}

func (e *env) provider(tb testing.TB, opts instancetype.Options) *instancetype.Provider {
	opts.Region = e.srv.Region
	if t, ok := tb.(*testing.T); ok {
		opts.Logger = testr.New(t)
	}
	return instancetype.New(e.ec2, e.prices, opts)
}

// amiReq is an AMI's architecture requirement as the class resolver writes it.
func amiReq(arch string) awsv1.AMI {
	return awsv1.AMI{ID: "ami-" + arch, Requirements: []corev1.NodeSelectorRequirement{
		{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}},
	}}
}

// resolvedClass is an AL2023 EC2NodeClass whose status lists subnets in zones (all the
// emulator's zones when none are given) and an AMI per architecture.
func (e *env) resolvedClass(zones ...string) *awsv1.EC2NodeClass {
	class := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:             "KarpenterNodeRole",
		},
		Status: awsv1.EC2NodeClassStatus{AMIs: []awsv1.AMI{amiReq("amd64"), amiReq("arm64")}},
	}
	for i, z := range e.srv.Zones() {
		if len(zones) > 0 && !contains(zones, z.Name) {
			continue
		}
		class.Status.Subnets = append(class.Status.Subnets, awsv1.Subnet{ID: "subnet-" + string(rune('a'+i)), Zone: z.Name, ZoneID: z.ID})
	}
	return class
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func byName(its cloudprovider.InstanceTypes) map[string]*cloudprovider.InstanceType {
	out := make(map[string]*cloudprovider.InstanceType, len(its))
	for _, it := range its {
		out[it.Name] = it
	}
	return out
}

// label is the single value the type's requirements give key, or "<absent>" for DoesNotExist.
func label(it *cloudprovider.InstanceType, key string) string {
	req, ok := it.Requirements[key]
	switch {
	case !ok:
		return "<unconstrained>"
	case req.Operator() == corev1.NodeSelectorOpDoesNotExist:
		return "<absent>"
	case req.Operator() == corev1.NodeSelectorOpIn && req.Len() == 1:
		return req.Any()
	}
	return req.String()
}

func quantity(list corev1.ResourceList, name corev1.ResourceName) string {
	q, ok := list[name]
	if !ok {
		return "<none>"
	}
	return q.String()
}
