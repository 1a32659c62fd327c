package scheduling

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkCompatible checks a typical pod against a typical NodePool: a few hundred instance
// types, several well-known keys, a custom key declared with Exists, integer bounds.
func BenchmarkCompatible(b *testing.B) {
	var instanceTypes []string
	for _, family := range []string{"c5", "c6i", "c7i", "m5", "m6i", "m7i", "r5", "r6i", "r7i", "c6g", "m6g", "r6g"} {
		for _, size := range []string{"large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "metal"} {
			for _, variant := range []string{"", "d", "n", "dn"} {
				instanceTypes = append(instanceTypes, fmt.Sprintf("%s%s.%s", family, variant, size))
			}
		}
	}
	nodePool := NewRequirements(
		NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, instanceTypes...),
		NewRequirement("karpenter.k8s.aws/instance-category", corev1.NodeSelectorOpIn, "c", "m", "r"),
		NewRequirement("karpenter.k8s.aws/instance-family", corev1.NodeSelectorOpExists),
		NewRequirement("karpenter.k8s.aws/instance-generation", corev1.NodeSelectorOpGt, "4"),
		NewRequirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64", "arm64"),
		NewRequirement(corev1.LabelOSStable, corev1.NodeSelectorOpIn, "linux"),
		NewRequirement("karpenter.sh/capacity-type", corev1.NodeSelectorOpIn, "spot", "on-demand"),
		NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "us-west-2a", "us-west-2b", "us-west-2c"),
		NewRequirement("karpenter.sh/nodepool", corev1.NodeSelectorOpIn, "default"),
		NewRequirement(team, corev1.NodeSelectorOpExists),
	)
	pod := NewRequirements(
		NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "us-west-2b"),
		NewRequirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"),
		NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m7i.xlarge", "m7i.2xlarge", "r7i.xlarge"),
		NewRequirement("karpenter.k8s.aws/instance-generation", NodeSelectorOpGte, "6"),
		NewRequirement("karpenter.sh/capacity-type", corev1.NodeSelectorOpNotIn, "spot"),
		NewRequirement(team, corev1.NodeSelectorOpIn, "team-a"),
		NewRequirement("karpenter.k8s.aws/instance-gpu-count", corev1.NodeSelectorOpDoesNotExist),
		NewRequirement("company.com/dedicated", corev1.NodeSelectorOpNotIn, "gpu"),
	)
	if err := nodePool.Compatible(pod, WellKnownLabels); err != nil {
		b.Fatalf("the benchmark's pod should fit: %v", err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := nodePool.Compatible(pod, WellKnownLabels); err != nil {
			b.Fatal(err)
		}
	}
}
