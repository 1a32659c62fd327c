package aws

import (
	"context"
	"errors"
	"fmt"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/joinery-dev/joinery/cloudprovider/aws/awserr"
)

// EKSAPI is the part of the EKS client start-up uses (eks:DescribeCluster).
type EKSAPI interface {
	DescribeCluster(ctx context.Context, in *eks.DescribeClusterInput, optFns ...func(*eks.Options)) (*eks.DescribeClusterOutput, error)
}

// eksCluster is what eks:DescribeCluster says nodes need to join.
type eksCluster struct {
	Endpoint string
	// CABundle is base64-encoded PEM, as EKS returns it and user data carries it.
	CABundle    string
	ServiceCIDR string
	IPFamily    corev1.IPFamily
}

// needsEKS reports whether start-up reads the cluster from EKS: EKS_CONTROL_PLANE is on and
// a flag nodes need is unset.
func (s *Settings) needsEKS() bool {
	return s.EKSControlPlane && (s.ClusterEndpoint == "" || s.ClusterCABundle == "" || s.ClusterServiceCIDR == "")
}

// withEKSCluster returns s with the cluster details its flags leave empty taken from c: flags
// win, and what neither sets falls back to the kubeconfig later (clusterInfo). The IP family
// has no flag; EKS's is taken.
func (s Settings) withEKSCluster(c eksCluster) Settings {
	if s.ClusterEndpoint == "" {
		s.ClusterEndpoint = c.Endpoint
	}
	if s.ClusterCABundle == "" {
		s.ClusterCABundle = c.CABundle
	}
	if s.ClusterServiceCIDR == "" {
		s.ClusterServiceCIDR = c.ServiceCIDR
	}
	s.ClusterIPFamily = c.IPFamily
	return s
}

// describeEKSCluster reads the cluster named name with eks:DescribeCluster. Its errors say
// what to fix: a cluster EKS does not know, or a permission the controller lacks.
func describeEKSCluster(ctx context.Context, api EKSAPI, name string) (eksCluster, error) {
	out, err := api.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: awssdk.String(name)})
	if err != nil {
		err = awserr.Classify(err)
		switch {
		case errors.Is(err, awserr.ErrNotFound):
			return eksCluster{}, fmt.Errorf("EKS_CONTROL_PLANE: eks:DescribeCluster finds no cluster %q in this region; check --cluster-name (CLUSTER_NAME) and --aws-region, or set --cluster-endpoint, --cluster-ca-bundle and --cluster-service-cidr: %w", name, err)
		case errors.Is(err, awserr.ErrUnauthorized):
			return eksCluster{}, fmt.Errorf("EKS_CONTROL_PLANE: eks:DescribeCluster of cluster %q is not allowed; grant the controller's role eks:DescribeCluster on it: %w", name, err)
		}
		return eksCluster{}, fmt.Errorf("EKS_CONTROL_PLANE: reading cluster %q with eks:DescribeCluster: %w", name, err)
	}
	c := out.Cluster
	if c == nil {
		return eksCluster{}, fmt.Errorf("EKS_CONTROL_PLANE: eks:DescribeCluster of cluster %q returned no cluster", name)
	}
	got := eksCluster{Endpoint: awssdk.ToString(c.Endpoint), IPFamily: corev1.IPv4Protocol}
	if c.CertificateAuthority != nil {
		got.CABundle = awssdk.ToString(c.CertificateAuthority.Data)
	}
	if n := c.KubernetesNetworkConfig; n != nil {
		got.ServiceCIDR = awssdk.ToString(n.ServiceIpv4Cidr)
		if n.IpFamily == ekstypes.IpFamilyIpv6 {
			got.IPFamily, got.ServiceCIDR = corev1.IPv6Protocol, awssdk.ToString(n.ServiceIpv6Cidr)
		}
	}
	if got.Endpoint == "" {
		// A cluster still being created has no endpoint yet; nodes could not join.
		return eksCluster{}, fmt.Errorf("EKS_CONTROL_PLANE: cluster %q has no endpoint yet (status %s)", name, c.Status)
	}
	return got, nil
}
