package awsemulator

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
)

// EKSCluster is the EKS cluster the emulated account runs: what eks:DescribeCluster answers,
// and the resource ARC zonal shifts of the cluster name (arc.go).
type EKSCluster struct {
	Name string
	// Endpoint is the API server URL nodes join.
	Endpoint string
	// CABundle is the API server's CA, base64-encoded PEM, as EKS reports it.
	CABundle string
	// ServiceCIDR is the service range of the cluster's IP family.
	ServiceCIDR string
	// IPFamily is "ipv4" or "ipv6".
	IPFamily string
	// Version is the Kubernetes minor version, e.g. "1.34".
	Version string
}

// DefaultEKSCluster is the cluster of an emulator given none: DefaultClusterName with EKS's
// default service range. Its endpoint and CA are placeholders no node can reach; a caller
// with a real API server sets them (cmd/awsemulator takes them from its kubeconfig).
var DefaultEKSCluster = EKSCluster{
	Name:        DefaultClusterName,
	CABundle:    base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\nYXdzZW11bGF0b3I=\n-----END CERTIFICATE-----\n")),
	ServiceCIDR: "10.100.0.0/16",
	IPFamily:    "ipv4",
	Version:     "1.34",
}

// withDefaults fills c's zero fields from DefaultEKSCluster; the placeholder endpoint is the
// EKS form for region.
func (c EKSCluster) withDefaults(region string) EKSCluster {
	d := DefaultEKSCluster
	if c.Name == "" {
		c.Name = d.Name
	}
	if c.Endpoint == "" {
		c.Endpoint = fmt.Sprintf("https://%X.gr7.%s.eks.amazonaws.com", []byte(c.Name), region)
	}
	if c.CABundle == "" {
		c.CABundle = d.CABundle
	}
	if c.IPFamily == "" {
		c.IPFamily = d.IPFamily
	}
	if c.ServiceCIDR == "" && c.IPFamily == d.IPFamily {
		c.ServiceCIDR = d.ServiceCIDR
	}
	if c.Version == "" {
		c.Version = d.Version
	}
	return c
}

// ClusterARN is the ARN of the emulated EKS cluster, the resource its zonal shifts name.
func (s *Server) ClusterARN() string {
	return fmt.Sprintf("arn:aws:eks:%s:%s:cluster/%s", s.Region, AccountID, s.cluster.Name)
}

func (s *Server) registerEKS() {
	s.handleREST(ServiceEKS, "DescribeCluster", "GET /clusters/{name}", s.describeCluster)
}

type eksClusterJSON struct {
	Name                 string  `json:"name"`
	Arn                  string  `json:"arn"`
	CreatedAt            float64 `json:"createdAt"`
	Version              string  `json:"version"`
	Endpoint             string  `json:"endpoint"`
	Status               string  `json:"status"`
	PlatformVersion      string  `json:"platformVersion"`
	CertificateAuthority struct {
		Data string `json:"data"`
	} `json:"certificateAuthority"`
	KubernetesNetworkConfig struct {
		ServiceIPv4CIDR string `json:"serviceIpv4Cidr,omitempty"`
		ServiceIPv6CIDR string `json:"serviceIpv6Cidr,omitempty"`
		IPFamily        string `json:"ipFamily"`
	} `json:"kubernetesNetworkConfig"`
	ZonalShiftConfig struct {
		Enabled bool `json:"enabled"`
	} `json:"zonalShiftConfig"`
}

// describeCluster answers for the emulated cluster; any other name is not found, as EKS
// answers for a cluster of another region or account.
func (s *Server) describeCluster(_ context.Context, r restRequest) (any, error) {
	name := r.path("name")
	if name != s.cluster.Name {
		return nil, &APIError{Code: "ResourceNotFoundException", Message: fmt.Sprintf("No cluster found for name: %s.", name), Status: http.StatusNotFound}
	}
	c := eksClusterJSON{
		Name: s.cluster.Name, Arn: s.ClusterARN(), CreatedAt: epochSeconds(s.started), Version: s.cluster.Version,
		Endpoint: s.cluster.Endpoint, Status: "ACTIVE", PlatformVersion: "eks.1",
	}
	c.CertificateAuthority.Data = s.cluster.CABundle
	c.KubernetesNetworkConfig.IPFamily = s.cluster.IPFamily
	if s.cluster.IPFamily == "ipv6" {
		c.KubernetesNetworkConfig.ServiceIPv6CIDR = s.cluster.ServiceCIDR
	} else {
		c.KubernetesNetworkConfig.ServiceIPv4CIDR = s.cluster.ServiceCIDR
	}
	c.ZonalShiftConfig.Enabled = true
	return struct {
		Cluster eksClusterJSON `json:"cluster"`
	}{c}, nil
}
