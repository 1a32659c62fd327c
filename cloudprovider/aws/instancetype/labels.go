package instancetype

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	"github.com/joinery-dev/joinery/scheduling"
)

// instanceTypeName splits names such as m7i-flex.2xlarge, c6gd.metal or inf2.xlarge into
// category (m, c, inf), generation (7, 6, 2), family (m7i-flex) and size.
var instanceTypeName = regexp.MustCompile(`^(([a-z]+)([0-9]+)[a-z0-9-]*)\.(.+)$`)

// architecture maps EC2's architecture to kubernetes.io/arch; types that are neither amd64 nor
// arm64 (i386-only, Apple silicon) are not supported.
func architecture(info *ec2types.InstanceTypeInfo) (string, bool) {
	if info.ProcessorInfo == nil {
		return "", false
	}
	for _, a := range info.ProcessorInfo.SupportedArchitectures {
		switch a {
		case ec2types.ArchitectureTypeX8664:
			return "amd64", true
		case ec2types.ArchitectureTypeArm64:
			return "arm64", true
		}
	}
	return "", false
}

// staticLabels are the requirements a type's shape decides whatever the class: every label of
// the seeds' well-known table it has a value for (In) and DoesNotExist for the rest, but the pod
// count (see classLabels), plus arch and instance type. Nil when the architecture is neither
// amd64 nor arm64.
func staticLabels(info *ec2types.InstanceTypeInfo) scheduling.Requirements {
	arch, ok := architecture(info)
	if !ok || info.VCpuInfo == nil || info.MemoryInfo == nil {
		return nil
	}
	name := string(info.InstanceType)
	labels := map[string]string{
		corev1.LabelInstanceTypeStable:                  name,
		corev1.LabelArchStable:                          arch,
		awsv1.LabelInstanceHypervisor:                   string(info.Hypervisor),
		awsv1.LabelInstanceCPU:                          strconv.Itoa(int(aws.ToInt32(info.VCpuInfo.DefaultVCpus))),
		awsv1.LabelInstanceMemory:                       strconv.FormatInt(aws.ToInt64(info.MemoryInfo.SizeInMiB), 10),
		awsv1.LabelInstanceCapabilityFlex:               strconv.FormatBool(strings.Contains(name, "-flex.")),
		awsv1.LabelInstanceEncryptionInTransitSupported: "false",
	}
	if m := instanceTypeName.FindStringSubmatch(name); m != nil {
		labels[awsv1.LabelInstanceFamily] = m[1]
		labels[awsv1.LabelInstanceCategory] = m[2]
		labels[awsv1.LabelInstanceGeneration] = m[3]
		labels[awsv1.LabelInstanceSize] = m[4]
	}
	if p := info.ProcessorInfo; p != nil {
		if p.Manufacturer != nil {
			labels[awsv1.LabelInstanceCPUManufacturer] = kebab(*p.Manufacturer)
		}
		if p.SustainedClockSpeedInGhz != nil {
			labels[awsv1.LabelInstanceCPUSustainedClockSpeedMhz] = strconv.Itoa(int(*p.SustainedClockSpeedInGhz*1000 + 0.5))
		}
	}
	if n := info.NetworkInfo; n != nil {
		labels[awsv1.LabelInstanceEncryptionInTransitSupported] = strconv.FormatBool(aws.ToBool(n.EncryptionInTransitSupported))
		if mbps := baselineBandwidthMbps(n); mbps > 0 {
			labels[awsv1.LabelInstanceNetworkBandwidth] = strconv.FormatInt(mbps, 10)
		}
	}
	if e := info.EbsInfo; e != nil && e.EbsOptimizedInfo != nil && e.EbsOptimizedInfo.MaximumBandwidthInMbps != nil {
		labels[awsv1.LabelInstanceEBSBandwidth] = strconv.Itoa(int(*e.EbsOptimizedInfo.MaximumBandwidthInMbps))
	}
	if gb := localNVMeGB(info); gb > 0 {
		labels[awsv1.LabelInstanceLocalNVME] = strconv.FormatInt(gb, 10)
	}
	if g := info.GpuInfo; g != nil && len(g.Gpus) > 0 {
		gpu := g.Gpus[0]
		labels[awsv1.LabelInstanceGPUName] = kebab(aws.ToString(gpu.Name))
		labels[awsv1.LabelInstanceGPUManufacturer] = kebab(aws.ToString(gpu.Manufacturer))
		labels[awsv1.LabelInstanceGPUCount] = strconv.Itoa(int(aws.ToInt32(gpu.Count)))
		if gpu.MemoryInfo != nil {
			labels[awsv1.LabelInstanceGPUMemory] = strconv.Itoa(int(aws.ToInt32(gpu.MemoryInfo.SizeInMiB)))
		}
	}
	switch {
	case info.NeuronInfo != nil && len(info.NeuronInfo.NeuronDevices) > 0:
		d := info.NeuronInfo.NeuronDevices[0]
		labels[awsv1.LabelInstanceAcceleratorName] = kebab(aws.ToString(d.Name))
		labels[awsv1.LabelInstanceAcceleratorManufacturer] = "aws"
		labels[awsv1.LabelInstanceAcceleratorCount] = strconv.Itoa(int(aws.ToInt32(d.Count)))
	case info.InferenceAcceleratorInfo != nil && len(info.InferenceAcceleratorInfo.Accelerators) > 0:
		d := info.InferenceAcceleratorInfo.Accelerators[0]
		labels[awsv1.LabelInstanceAcceleratorName] = kebab(aws.ToString(d.Name))
		labels[awsv1.LabelInstanceAcceleratorManufacturer] = kebab(aws.ToString(d.Manufacturer))
		labels[awsv1.LabelInstanceAcceleratorCount] = strconv.Itoa(int(aws.ToInt32(d.Count)))
	}

	reqs := scheduling.NewRequirements()
	for key, value := range labels {
		reqs.Add(scheduling.NewRequirement(key, corev1.NodeSelectorOpIn, value))
	}
	for _, key := range awsv1.InstanceTypeLabels {
		if _, ok := labels[key]; !ok && key != awsv1.LabelInstancePods {
			reqs.Add(scheduling.NewRequirement(key, corev1.NodeSelectorOpDoesNotExist))
		}
	}
	return reqs
}

// classLabels are static plus what the class decides: the pod count its kubelet allows and the
// operating system (and Windows build) of its AMI family. static is not modified.
func (b *builder) classLabels(static scheduling.Requirements, capacity corev1.ResourceList) scheduling.Requirements {
	reqs := static.Clone()
	reqs.Add(
		scheduling.NewRequirement(awsv1.LabelInstancePods, corev1.NodeSelectorOpIn, strconv.FormatInt(capacity.Pods().Value(), 10)),
		scheduling.NewRequirement(corev1.LabelOSStable, corev1.NodeSelectorOpIn, b.os),
	)
	if b.windowsBuild != "" {
		reqs.Add(scheduling.NewRequirement(corev1.LabelWindowsBuild, corev1.NodeSelectorOpIn, b.windowsBuild))
	}
	// Every instance of a class with a placement group launches into it; a class without one
	// must not be chosen for a pod that asks for a group.
	if pg := b.class.PlacementGroup(); pg != nil {
		reqs.Add(scheduling.NewRequirement(awsv1.LabelPlacementGroupID, corev1.NodeSelectorOpIn, pg.ID))
	} else {
		reqs.Add(scheduling.NewRequirement(awsv1.LabelPlacementGroupID, corev1.NodeSelectorOpDoesNotExist))
	}
	return reqs
}

// baselineBandwidthMbps is the sum of the network cards' baseline bandwidth.
func baselineBandwidthMbps(n *ec2types.NetworkInfo) int64 {
	var gbps float64
	for _, card := range n.NetworkCards {
		gbps += aws.ToFloat64(card.BaselineBandwidthInGbps)
	}
	return int64(gbps*1000 + 0.5)
}

// localNVMeGB is the instance store's total size when it is NVMe, else 0.
func localNVMeGB(info *ec2types.InstanceTypeInfo) int64 {
	s := info.InstanceStorageInfo
	if s == nil || s.NvmeSupport == ec2types.EphemeralNvmeSupportUnsupported {
		return 0
	}
	return aws.ToInt64(s.TotalSizeInGB)
}

// kebab lower-cases a name and joins its words with '-' so that it is a valid label value:
// "Radeon Pro V520" → radeon-pro-v520, NVIDIA → nvidia.
func kebab(s string) string {
	return strings.ToLower(strings.Join(strings.Fields(s), "-"))
}
