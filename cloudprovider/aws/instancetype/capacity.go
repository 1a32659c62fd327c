package instancetype

import (
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/aws/amifamily"
)

// Extended resources a node of an instance type advertises, by the device plugins that expose
// them.
const (
	ResourceNVIDIAGPU  corev1.ResourceName = "nvidia.com/gpu"
	ResourceAMDGPU     corev1.ResourceName = "amd.com/gpu"
	ResourceNeuron     corev1.ResourceName = "aws.amazon.com/neuron"
	ResourceNeuronCore corev1.ResourceName = "aws.amazon.com/neuroncore"
	ResourceEFA        corev1.ResourceName = "vpc.amazonaws.com/efa"
	ResourcePodENI     corev1.ResourceName = "vpc.amazonaws.com/pod-eni"
)

// capacity is what a node of the type reports: cpu, memory net of the VM overhead, pods,
// ephemeral storage and the extended resources of its devices.
func (b *builder) capacity(info *ec2types.InstanceTypeInfo) corev1.ResourceList {
	vcpus := int64(aws.ToInt32(info.VCpuInfo.DefaultVCpus))
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(vcpus, resource.DecimalSI),
		corev1.ResourceMemory:           cloudprovider.MemoryCapacity(aws.ToInt64(info.MemoryInfo.SizeInMiB), b.overheadPercent),
		corev1.ResourcePods:             *resource.NewQuantity(cloudprovider.Pods(ENILimitedPods(info, b.reservedENIs), vcpus, b.settings), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: b.ephemeralStorage(info),
	}
	if g := info.GpuInfo; g != nil {
		for _, gpu := range g.Gpus {
			name := ResourceNVIDIAGPU
			switch strings.ToUpper(aws.ToString(gpu.Manufacturer)) {
			case "NVIDIA":
			case "AMD":
				name = ResourceAMDGPU
			default:
				continue
			}
			addCount(capacity, name, int64(aws.ToInt32(gpu.Count)))
		}
	}
	if n := info.NeuronInfo; n != nil {
		for _, d := range n.NeuronDevices {
			addCount(capacity, ResourceNeuron, int64(aws.ToInt32(d.Count)))
			if d.CoreInfo != nil {
				addCount(capacity, ResourceNeuronCore, int64(aws.ToInt32(d.Count))*int64(aws.ToInt32(d.CoreInfo.Count)))
			}
		}
	}
	if n := info.NetworkInfo; n != nil && aws.ToBool(n.EfaSupported) && n.EfaInfo != nil {
		addCount(capacity, ResourceEFA, int64(aws.ToInt32(n.EfaInfo.MaximumEfaInterfaces)))
	}
	if branches := podENIs(info); branches > 0 {
		addCount(capacity, ResourcePodENI, branches)
	}
	return capacity
}

func addCount(list corev1.ResourceList, name corev1.ResourceName, n int64) {
	if n <= 0 {
		return
	}
	q := list[name]
	q.Add(*resource.NewQuantity(n, resource.DecimalSI))
	list[name] = q
}

// ENILimitedPods is the pod density the VPC CNI allows without prefix delegation: every
// interface of the default network card but reservedENIs gives its IPv4 addresses less the
// interface's own to pods, plus two host-network pods (aws-node and kube-proxy).
func ENILimitedPods(info *ec2types.InstanceTypeInfo, reservedENIs int) int64 {
	n := info.NetworkInfo
	if n == nil {
		return 0
	}
	enis := int64(aws.ToInt32(n.MaximumNetworkInterfaces))
	index := aws.ToInt32(n.DefaultNetworkCardIndex)
	for _, card := range n.NetworkCards {
		if aws.ToInt32(card.NetworkCardIndex) == index && card.MaximumNetworkInterfaces != nil {
			enis = int64(*card.MaximumNetworkInterfaces)
		}
	}
	ips := int64(aws.ToInt32(n.Ipv4AddressesPerInterface))
	return max((enis-int64(reservedENIs))*(ips-1)+2, 0)
}

// ephemeralStorage is the size of the volume the kubelet's root directory lives on: the
// instance store when the class assembles it as RAID0, else the class's (or its AMI family's)
// root or data volume.
func (b *builder) ephemeralStorage(info *ec2types.InstanceTypeInfo) resource.Quantity {
	var instanceStore resource.Quantity
	if gb := localNVMeGB(info); gb > 0 {
		instanceStore = resource.MustParse(fmt.Sprintf("%dG", gb))
	}
	return amifamily.EphemeralStorage(b.family, b.class.Spec.BlockDeviceMappings, b.class.Spec.InstanceStorePolicy, instanceStore)
}

// podENIBySize is the number of branch interfaces (security groups for pods) the VPC resource
// controller gives a trunk-capable Nitro instance, by size.
var podENIBySize = map[string]int64{
	"medium": 4, "large": 9, "xlarge": 18, "2xlarge": 38, "3xlarge": 54, "4xlarge": 54, "6xlarge": 54,
	"8xlarge": 54, "9xlarge": 54, "12xlarge": 54, "16xlarge": 107, "18xlarge": 107, "24xlarge": 107,
	"32xlarge": 107, "48xlarge": 107, "metal": 107, "metal-24xl": 107, "metal-48xl": 107,
}

// podENIs is the vpc.amazonaws.com/pod-eni capacity: Nitro types support ENI trunking,
// burstable ones and Xen types do not.
func podENIs(info *ec2types.InstanceTypeInfo) int64 {
	if aws.ToBool(info.BurstablePerformanceSupported) || (info.Hypervisor != ec2types.InstanceTypeHypervisorNitro && !aws.ToBool(info.BareMetal)) {
		return 0
	}
	_, size, ok := strings.Cut(string(info.InstanceType), ".")
	if !ok {
		return 0
	}
	return BranchInterfaces(size)
}

// BranchInterfaces is the number of branch interfaces the VPC resource controller gives a
// trunk-capable (Nitro, not burstable) instance of size, 0 for a size it does not list.
func BranchInterfaces(size string) int64 {
	return podENIBySize[size]
}

// KubeletSettings reads an EC2NodeClass kubelet configuration (or one parsed back from user
// data): pod density, reserved resources and eviction thresholds. The pid reservations do not
// reduce any schedulable resource.
func KubeletSettings(k *awsv1.KubeletConfiguration) (cloudprovider.KubeletSettings, error) {
	if k == nil {
		return cloudprovider.KubeletSettings{}, nil
	}
	kubeReserved, err := resourceList("kubeReserved", k.KubeReserved)
	if err != nil {
		return cloudprovider.KubeletSettings{}, err
	}
	systemReserved, err := resourceList("systemReserved", k.SystemReserved)
	if err != nil {
		return cloudprovider.KubeletSettings{}, err
	}
	return cloudprovider.KubeletSettings{
		MaxPods:        k.MaxPods,
		PodsPerCore:    k.PodsPerCore,
		KubeReserved:   kubeReserved,
		SystemReserved: systemReserved,
		EvictionHard:   k.EvictionHard,
		EvictionSoft:   k.EvictionSoft,
	}, nil
}

func resourceList(field string, m map[string]string) (corev1.ResourceList, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := corev1.ResourceList{}
	for name, value := range m {
		if name == "pid" {
			continue
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return nil, fmt.Errorf("kubelet %s[%s]=%q: %w", field, name, value, err)
		}
		out[corev1.ResourceName(name)] = q
	}
	return out, nil
}
