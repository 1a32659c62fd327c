package amifamily

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// Cluster is what a node needs to know to join the cluster.
type Cluster struct {
	// Name is the EKS cluster name.
	Name string
	// Endpoint is the API server URL.
	Endpoint string
	// CABundle is the cluster's certificate authority, base64-encoded PEM.
	CABundle string
	// DNSIP is the cluster DNS service address, used unless spec.kubelet.clusterDNS is set.
	DNSIP string
	// ServiceCIDR is the cluster's service address range (AL2023 NodeConfig spec.cluster.cidr,
	// AL2 --service-ipv6-cidr on IPv6 clusters).
	ServiceCIDR string
	// IPFamily is the cluster's IP family; empty means IPv4.
	IPFamily corev1.IPFamily
}

// Input is everything resolved for one launch that shapes its user data.
type Input struct {
	// Family is the AMI family (awsv1.AMIFamily*).
	Family  string
	Cluster Cluster
	// UserData is the EC2NodeClass's spec.userData; empty means none.
	UserData string
	// Kubelet is spec.kubelet. Its MaxPods is ignored in favour of MaxPods below.
	Kubelet *awsv1.KubeletConfiguration
	// Labels are the labels the node registers with.
	Labels map[string]string
	// Taints are the taints the node registers with. Use RegistrationTaints to build them from a
	// NodeClaim: it adds karpenter.sh/unregistered:NoExecute, which registration requires.
	Taints []corev1.Taint
	// MaxPods is the pod capacity decided for the instance type (spec.kubelet.maxPods, ENI
	// limits and podsPerCore already applied); zero leaves the image's own default.
	MaxPods int32
	// InstanceStorePolicy is spec.instanceStorePolicy; RAID0 makes AL2 and AL2023 assemble the
	// instance-store disks into one array for kubelet and containerd.
	InstanceStorePolicy *awsv1.InstanceStorePolicy
}

// UnregisteredTaint is the taint every joinery node registers with and joinery removes once the
// node is initialized; a node registered without it is never adopted.
var UnregisteredTaint = corev1.Taint{Key: karpv1.UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}

// RegistrationTaints are the taints a NodeClaim's node registers with: its taints, its startup
// taints and the unregistered taint, each (key, effect) once.
func RegistrationTaints(nodeClaim *karpv1.NodeClaim) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range slices.Concat(nodeClaim.Spec.Taints, nodeClaim.Spec.StartupTaints, []corev1.Taint{UnregisteredTaint}) {
		if !slices.ContainsFunc(out, func(seen corev1.Taint) bool { return seen.MatchTaint(&t) }) {
			out = append(out, t)
		}
	}
	return out
}

// clusterDNS is the DNS servers kubelet is told about: spec.kubelet.clusterDNS, else the
// cluster's DNS service.
func (in Input) clusterDNS() []string {
	if in.Kubelet != nil && len(in.Kubelet.ClusterDNS) > 0 {
		return in.Kubelet.ClusterDNS
	}
	if in.Cluster.DNSIP != "" {
		return []string{in.Cluster.DNSIP}
	}
	return nil
}

func (in Input) kubelet() awsv1.KubeletConfiguration {
	if in.Kubelet == nil {
		return awsv1.KubeletConfiguration{}
	}
	return *in.Kubelet
}

func (in Input) raid0() bool {
	return in.InstanceStorePolicy != nil && *in.InstanceStorePolicy == awsv1.InstanceStorePolicyRAID0
}

// NodeBootstrap is what a node's kubelet starts with, read back from user data.
type NodeBootstrap struct {
	ClusterName       string
	APIServerEndpoint string
	CABundle          string
	ClusterDNS        []string
	Labels            map[string]string
	// Taints are sorted by key, then effect.
	Taints []corev1.Taint
	// MaxPods is zero when the user data leaves it to the image.
	MaxPods int32
	// Kubelet holds the remaining spec.kubelet settings; its MaxPods and ClusterDNS stay nil
	// (see the fields above).
	Kubelet awsv1.KubeletConfiguration
	// RAID0 reports that the instance-store disks are assembled into one array.
	RAID0 bool
}
