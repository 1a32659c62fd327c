// Package testcatalog holds the instance-type catalog the solver and consolidation benchmarks
// share, so both measure the same workload.
package testcatalog

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/scheduling"
)

// Bench is the provisioning benchmark's catalog: bench-i for i = 1..400 with cpu i, memory
// 2i GiB, pods 10i, spot in zones 1-2 and on-demand in zones 1-3, all available, price
// 0.1·cpu + 0.1·GB. The types reserve nothing, so allocatable equals capacity and the
// workload is the same for any autoscaler given it.
func Bench() cloudprovider.InstanceTypes {
	var its cloudprovider.InstanceTypes
	for i := int64(1); i <= 400; i++ {
		name := fmt.Sprintf("bench-%d", i)
		memory := resource.NewQuantity(2*i<<30, resource.BinarySI)
		price := 0.1*float64(i) + 0.1*float64(memory.Value())/1e9
		its = append(its, &cloudprovider.InstanceType{
			Name: name,
			Requirements: scheduling.NewRequirements(
				scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, name),
				scheduling.NewRequirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"),
				scheduling.NewRequirement(corev1.LabelOSStable, corev1.NodeSelectorOpIn, "linux"),
				scheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-1", "zone-2", "zone-3"),
				scheduling.NewRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeSpot, karpv1.CapacityTypeOnDemand),
			),
			Offerings: cloudprovider.Offerings{
				cloudprovider.NewOffering("zone-1", karpv1.CapacityTypeSpot, price, true),
				cloudprovider.NewOffering("zone-2", karpv1.CapacityTypeSpot, price, true),
				cloudprovider.NewOffering("zone-1", karpv1.CapacityTypeOnDemand, price, true),
				cloudprovider.NewOffering("zone-2", karpv1.CapacityTypeOnDemand, price, true),
				cloudprovider.NewOffering("zone-3", karpv1.CapacityTypeOnDemand, price, true),
			},
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewQuantity(i, resource.DecimalSI),
				corev1.ResourceMemory: *memory,
				corev1.ResourcePods:   *resource.NewQuantity(10*i, resource.DecimalSI),
			},
		})
	}
	return its
}
