package localcluster

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/joinery-dev/joinery/internal/awsemulator"
)

// Cloud providers the local cluster runs joinery with.
const (
	CloudProviderKwok = "kwok"
	CloudProviderAWS  = "aws"
)

// The AWS account the emulator plays: its seeded subnets, security groups and node role are
// tagged for AWSClusterName, which joinery-controller runs as, so that a sample EC2NodeClass
// selecting `karpenter.sh/discovery: joinery` finds them.
const (
	AWSClusterName = awsemulator.DefaultClusterName
	AWSRegion      = awsemulator.DefaultRegion
	// AWSNodeRole is the seeded IAM role nodes run as (spec.role of an EC2NodeClass).
	AWSNodeRole = "KarpenterNodeRole-" + AWSClusterName
	// AWSInterruptionQueue is the SQS queue the emulator creates and joinery-controller polls
	// for interruption events; Karpenter's convention names it after the cluster.
	AWSInterruptionQueue = AWSClusterName
)

// clusterDNS is the DNS address nodes are told about: the tenth of serviceCIDR, as kubeadm
// picks it. Nothing serves it; nodes only carry it in their kubelet configuration.
const clusterDNS = "10.0.0.10"

// awsCredentials are the static credentials joinery's binaries sign emulator calls with; the
// emulator accepts any. The shared config files are hidden and the instance metadata service
// disabled, so that nothing on the machine (profiles, SSO, an EC2 role) ever reaches real AWS
// or slows start-up.
var awsCredentials = []string{
	"AWS_ACCESS_KEY_ID=" + ControllerAWSAccessKey,
	"AWS_SECRET_ACCESS_KEY=local-cluster-secret",
	"AWS_SESSION_TOKEN=",
	"AWS_PROFILE=",
	"AWS_CONFIG_FILE=/dev/null",
	"AWS_SHARED_CREDENTIALS_FILE=/dev/null",
	"AWS_EC2_METADATA_DISABLED=true",
}

// ControllerAWSAccessKey is the access key joinery-controller signs its emulator calls with;
// the emulator counts calls per key (awsemulator.AdminClient.CallsBy).
const ControllerAWSAccessKey = "AKIAJOINERYLOCAL"

// AWSZonalShiftPollInterval is how often joinery's binaries list zonal shifts in the local
// cluster, where tests start and cancel them: far below the default, so a shift takes effect
// in seconds.
const AWSZonalShiftPollInterval = "1s"

// SchedulerAWSAccessKey is the access key joinery-scheduler signs its emulator calls with.
// The emulator lets it only read (Describe*, Get*, List*), as a read-only IAM policy would:
// the scheduler plans with instance types and prices, and launching or terminating is
// joinery-controller's alone.
const SchedulerAWSAccessKey = "AKIAJOINERYSCHEDULER"

// awsEmulator runs bin/awsemulator on a free loopback port with its node agent registering
// Nodes in this cluster. It is ready once its admin API answers.
func (c *Cluster) awsEmulator() component {
	return component{
		name: string(AWSEmulator),
		configure: func() ([]string, error) {
			port, err := freePort()
			if err != nil {
				return nil, err
			}
			c.awsEmulatorPort = port
			return []string{
				"--address=127.0.0.1",
				"--port=" + strconv.Itoa(port),
				"--region=" + AWSRegion,
				"--kubeconfig=" + c.kubeconfigPath,
				"--cluster-name=" + AWSClusterName,
				"--create-queues=" + AWSInterruptionQueue,
				"--read-only-access-keys=" + SchedulerAWSAccessKey,
				// eks:DescribeCluster reports the cluster's service range (the kubeconfig's API
				// server and CA are the emulator's defaults).
				"--cluster-service-cidr=" + serviceCIDR,
			}, nil
		},
		ready: func(ctx context.Context) error {
			return probeOK(ctx, http.DefaultClient, c.AWSEmulatorURL()+awsemulator.AdminPathPrefix+"healthz")
		},
		ports: func() []int { return []int{c.awsEmulatorPort} },
	}
}

// AWSEmulatorURL is the emulator's base endpoint (the AWS APIs and, under
// awsemulator.AdminPathPrefix, its admin API); empty when the cluster runs no emulator.
func (c *Cluster) AWSEmulatorURL() string {
	if c.awsEmulatorPort == 0 {
		return ""
	}
	return fmt.Sprintf("http://127.0.0.1:%d", c.awsEmulatorPort)
}

// CloudProvider is the cloud provider joinery runs with.
func (c *Cluster) CloudProvider() string {
	if c.opts.CloudProvider == "" {
		return CloudProviderKwok
	}
	return c.opts.CloudProvider
}

// cloudProviderArgs are the flags that point a joinery binary at the cluster's cloud
// provider. Both follow the cluster's zonal shifts, which tests start. The controller also
// learns what nodes join with: the cluster DNS from its flag, the API server, CA and service
// CIDR from eks:DescribeCluster, as on EKS.
func (c *Cluster) cloudProviderArgs(controller bool) []string {
	if c.CloudProvider() != CloudProviderAWS {
		return []string{"--cloud-provider=" + CloudProviderKwok}
	}
	args := []string{
		"--cloud-provider=" + CloudProviderAWS,
		"--cluster-name=" + AWSClusterName,
		"--aws-region=" + AWSRegion,
		"--aws-endpoint-url=" + c.AWSEmulatorURL(),
		"--enable-zonal-shift",
		"--zonal-shift-poll-interval=" + AWSZonalShiftPollInterval,
	}
	if controller {
		args = append(args, "--cluster-dns="+clusterDNS, "--eks-control-plane", "--interruption-queue="+AWSInterruptionQueue)
	}
	return args
}

// awsEnv is the environment joinery's binaries run with: the emulator's credentials with the
// AWS provider, nothing extra otherwise.
func (c *Cluster) awsEnv() []string {
	if c.CloudProvider() != CloudProviderAWS {
		return nil
	}
	return awsCredentials
}

// schedulerAWSEnv is awsEnv with joinery-scheduler's read-only access key (the last value of
// a repeated variable wins).
func (c *Cluster) schedulerAWSEnv() []string {
	env := c.awsEnv()
	if env == nil {
		return nil
	}
	return append(slices.Clone(env), "AWS_ACCESS_KEY_ID="+SchedulerAWSAccessKey)
}

// CLIArgs are the flags and environment that point the joinery CLI (bin/joinery) at the
// cluster and its cloud provider, as joinery-scheduler is pointed at them.
func (c *Cluster) CLIArgs() (args, env []string) {
	args = append([]string{"--kubeconfig=" + c.KubeconfigPath(), "--controller-namespace=" + c.ControllerNamespace()}, c.cloudProviderArgs(false)...)
	return args, c.schedulerAWSEnv()
}
