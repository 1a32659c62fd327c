package aws

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	corev1 "k8s.io/api/core/v1"

	"github.com/joinery-dev/joinery/cloudprovider"
)

// Settings are the AWS provider's flags.
type Settings struct {
	// ClusterName tags and selects the cluster's instances, launch templates and instance
	// profiles, and is the name nodes bootstrap into.
	ClusterName string
	// ClusterEndpoint is the API server URL nodes join; empty: the kubeconfig's server.
	ClusterEndpoint string
	// ClusterCABundle is the API server's CA, base64-encoded PEM; empty: the kubeconfig's or
	// the in-cluster CA.
	ClusterCABundle string
	// ClusterDNS is the cluster DNS address nodes use; empty: the kube-dns Service's
	// ClusterIP, else DefaultClusterDNS.
	ClusterDNS string
	// ClusterServiceCIDR is the cluster's service range (AL2023's NodeConfig spec.cluster.cidr).
	ClusterServiceCIDR string
	// Region is the AWS region; empty: the SDK's (AWS_REGION, the shared config file).
	Region string
	// EndpointURL is the base endpoint of every AWS client (the emulator); empty: AWS itself.
	EndpointURL string
	// VMMemoryOverheadPercent is the share of an instance type's memory the node does not
	// report.
	VMMemoryOverheadPercent float64
	// ReservedENIs are network interfaces kept from pods when computing pod density.
	ReservedENIs int
	// IsolatedVPC means the Pricing API cannot be reached: on-demand prices stay the built-in
	// table's.
	IsolatedVPC bool
	// EnableZonalShift makes zones the cluster's traffic is shifted away from (ARC zonal shifts
	// of the EKS cluster) unavailable: nothing is planned or launched there while a shift lasts.
	EnableZonalShift bool
	// ZonalShiftPollInterval is how often active zonal shifts are listed.
	ZonalShiftPollInterval time.Duration
	// EKSControlPlane means the cluster runs on EKS: the endpoint, CA, service CIDR and IP
	// family not set by flags are read from eks:DescribeCluster at start-up.
	EKSControlPlane bool
	// ClusterIPFamily is not a flag: EKS_CONTROL_PLANE reads it from EKS (empty: IPv4).
	ClusterIPFamily corev1.IPFamily
	// DisableReservedCapacity is not a flag: the binary sets it from the ReservedCapacity
	// feature gate (off: no capacity reservation is launched into or priced).
	DisableReservedCapacity bool
	// AMIRefreshInterval is how often an EC2NodeClass's AMIs are resolved again;
	// SubnetRefreshInterval its subnets and security groups. joinery-controller binds them
	// (AMI_REFRESH_INTERVAL, SUBNET_REFRESH_INTERVAL); zero is the controller's default.
	AMIRefreshInterval    time.Duration
	SubnetRefreshInterval time.Duration
	// DisableDryRun skips the EC2 dry-run authorization checks of the EC2NodeClass
	// validation; ValidationSucceeded says they were skipped.
	DisableDryRun bool

	// envErrs are environment variables that could not be parsed as their flag's type.
	envErrs []error
}

// DefaultZonalShiftPollInterval is how often active zonal shifts are listed unless
// --zonal-shift-poll-interval says otherwise: a shift is meant to take effect in minutes.
const DefaultZonalShiftPollInterval = 30 * time.Second

// DefaultClusterDNS is kubeadm's and EKS's cluster DNS address for the default service range.
const DefaultClusterDNS = "10.96.0.10"

// BindFlags registers the settings on fs. Each flag defaults to Karpenter's environment
// variable of the same setting when it is set (CLUSTER_NAME, CLUSTER_ENDPOINT, ...).
func (s *Settings) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&s.ClusterName, "cluster-name", env("CLUSTER_NAME", ""), "aws: name of the cluster; tags and selects its instances and launch templates, and is the cluster nodes join (env CLUSTER_NAME)")
	fs.StringVar(&s.ClusterEndpoint, "cluster-endpoint", env("CLUSTER_ENDPOINT", ""), "aws: API server URL nodes join (env CLUSTER_ENDPOINT; default: the kubeconfig's server)")
	fs.StringVar(&s.ClusterCABundle, "cluster-ca-bundle", env("CLUSTER_CA_BUNDLE", ""), "aws: base64-encoded PEM of the API server's CA (env CLUSTER_CA_BUNDLE; default: the kubeconfig's or the in-cluster CA)")
	fs.StringVar(&s.ClusterDNS, "cluster-dns", env("CLUSTER_DNS", ""), "aws: cluster DNS address nodes use unless spec.kubelet.clusterDNS is set (default: the kube-system/kube-dns Service's ClusterIP, else "+DefaultClusterDNS+")")
	fs.StringVar(&s.ClusterServiceCIDR, "cluster-service-cidr", env("CLUSTER_SERVICE_CIDR", ""), "aws: the cluster's service CIDR, written to AL2023's NodeConfig")
	fs.StringVar(&s.Region, "aws-region", env("AWS_REGION", ""), "aws: region (default: the AWS SDK's, from AWS_REGION or the shared config)")
	fs.StringVar(&s.EndpointURL, "aws-endpoint-url", env("AWS_ENDPOINT_URL", ""), "aws: base endpoint of every AWS client, e.g. the emulator's http://127.0.0.1:PORT (default: AWS itself)")
	fs.Float64Var(&s.VMMemoryOverheadPercent, "vm-memory-overhead-percent", s.envFloat("VM_MEMORY_OVERHEAD_PERCENT", cloudprovider.DefaultVMMemoryOverheadPercent), "aws: share of an instance type's memory the node does not report, as a fraction (env VM_MEMORY_OVERHEAD_PERCENT)")
	fs.IntVar(&s.ReservedENIs, "reserved-enis", s.envInt("RESERVED_ENIS", 0), "aws: network interfaces kept from pods when computing ENI-limited pod density (env RESERVED_ENIS)")
	fs.BoolVar(&s.IsolatedVPC, "isolated-vpc", s.envBool("ISOLATED_VPC", false), "aws: the Pricing API is unreachable; use the built-in on-demand prices (env ISOLATED_VPC)")
	fs.BoolVar(&s.EnableZonalShift, "enable-zonal-shift", s.envBool("ENABLE_ZONAL_SHIFT", false), "aws: treat availability zones under an active ARC zonal shift of the cluster as unavailable: nothing is planned or launched there until the shift ends (env ENABLE_ZONAL_SHIFT)")
	fs.DurationVar(&s.ZonalShiftPollInterval, "zonal-shift-poll-interval", DefaultZonalShiftPollInterval, "aws: with --enable-zonal-shift, how often the cluster's active zonal shifts are listed")
	fs.BoolVar(&s.EKSControlPlane, "eks-control-plane", s.envBool("EKS_CONTROL_PLANE", false), "aws: the cluster runs on an EKS control plane; the endpoint, CA bundle, service CIDR and IP family not set by flags are read from eks:DescribeCluster at start-up (env EKS_CONTROL_PLANE)")
}

// Validate checks the settings. launches says whether the caller launches instances, which
// needs the cluster's name; reading instance types does not.
func (s *Settings) Validate(launches bool) error {
	errs := append([]error(nil), s.envErrs...)
	if launches && s.ClusterName == "" {
		errs = append(errs, errors.New("--cluster-name is required with --cloud-provider=aws"))
	}
	if s.VMMemoryOverheadPercent < 0 || s.VMMemoryOverheadPercent >= 1 {
		errs = append(errs, fmt.Errorf("--vm-memory-overhead-percent %v is not a fraction in [0, 1)", s.VMMemoryOverheadPercent))
	}
	if s.ReservedENIs < 0 {
		errs = append(errs, fmt.Errorf("--reserved-enis %d is negative", s.ReservedENIs))
	}
	if s.EnableZonalShift && s.ZonalShiftPollInterval <= 0 {
		errs = append(errs, fmt.Errorf("--zonal-shift-poll-interval %s is not positive", s.ZonalShiftPollInterval))
	}
	if s.EnableZonalShift && s.ClusterName == "" {
		errs = append(errs, errors.New("--enable-zonal-shift needs --cluster-name: the shifts listed are the cluster's"))
	}
	if s.EndpointURL != "" && !strings.HasPrefix(s.EndpointURL, "http://") && !strings.HasPrefix(s.EndpointURL, "https://") {
		errs = append(errs, fmt.Errorf("--aws-endpoint-url %q is not an http(s) URL", s.EndpointURL))
	}
	return errors.Join(errs...)
}

// AWSConfig loads the SDK's configuration with the default credential chain (environment,
// shared files, web identity, container and instance roles), in Region when set, with every
// client pointed at EndpointURL when set.
func (s *Settings) AWSConfig(ctx context.Context) (awssdk.Config, error) {
	var opts []func(*awsconfig.LoadOptions) error
	if s.Region != "" {
		opts = append(opts, awsconfig.WithRegion(s.Region))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return awssdk.Config{}, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return awssdk.Config{}, errors.New("no AWS region: set --aws-region or AWS_REGION")
	}
	if s.EndpointURL != "" {
		cfg.BaseEndpoint = awssdk.String(s.EndpointURL)
	}
	return cfg, nil
}

// PricingRegion is the region whose endpoint serves the Pricing API for prices of region: the
// API is served from a few regions only.
func PricingRegion(region string) string {
	switch {
	case strings.HasPrefix(region, "cn-"):
		return "cn-northwest-1"
	case strings.HasPrefix(region, "ap-") || strings.HasPrefix(region, "me-"):
		return "ap-south-1"
	case strings.HasPrefix(region, "eu-") || strings.HasPrefix(region, "af-") || strings.HasPrefix(region, "il-"):
		return "eu-central-1"
	default:
		return "us-east-1"
	}
}

func env(name, fallback string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return fallback
}

// envFloat, envInt and envBool read a variable as their flag's type; one that does not parse
// is reported by Validate.
func (s *Settings) envFloat(name string, fallback float64) float64 {
	return envParse(s, name, fallback, func(v string) (float64, error) { return strconv.ParseFloat(v, 64) })
}

func (s *Settings) envInt(name string, fallback int) int {
	return envParse(s, name, fallback, strconv.Atoi)
}

func (s *Settings) envBool(name string, fallback bool) bool {
	return envParse(s, name, fallback, strconv.ParseBool)
}

func envParse[T any](s *Settings, name string, fallback T, parse func(string) (T, error)) T {
	raw, ok := os.LookupEnv(name)
	if !ok || raw == "" {
		return fallback
	}
	v, err := parse(raw)
	if err != nil {
		s.envErrs = append(s.envErrs, fmt.Errorf("environment variable %s=%q: %w", name, raw, err))
		return fallback
	}
	return v
}
