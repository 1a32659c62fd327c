package cloudprovider

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joinery-dev/joinery/scheduling"
)

// InstanceType is a machine shape the provider can launch: its labels as requirements, the
// offerings it can be bought through, its capacity and the overhead the node keeps for itself.
// Treat an InstanceType as immutable once Allocatable has been called: the result is cached.
type InstanceType struct {
	// Name is the provider's name of the type, the value of node.kubernetes.io/instance-type.
	Name string
	// Requirements are the labels a node of this type carries (In with one value), the sets a
	// node chooses from (os, and zone and capacity type across the offerings), and DoesNotExist
	// for the well-known labels the type lacks (a type without GPUs has no GPU count), so that a
	// requirement on a label the type does not have rules it out.
	Requirements scheduling.Requirements
	// Offerings are the ways to buy the type.
	Offerings Offerings
	// Capacity is what a node of this type reports as capacity: cpu, memory (net of the VM's
	// memory overhead), pods, ephemeral-storage and extended resources such as nvidia.com/gpu.
	Capacity corev1.ResourceList
	// Overhead is what the node reserves from Capacity for itself.
	Overhead Overhead
	// VolumeLimits are the attach limits a node of this type reports in its CSINode, by CSI
	// driver name (the CSI driver's allocatable count); a driver not listed is unlimited.
	VolumeLimits map[string]int32
	// Devices are the devices a node of this type publishes in its ResourceSlices through DRA
	// drivers, for DynamicResources to allocate claims from.
	Devices []DeviceSet

	allocatableOnce sync.Once
	allocatable     corev1.ResourceList
}

// WithOfferings returns a copy of it with offerings instead of its own, sharing every other
// field: the one way to derive a type, so that no field (attach limits, devices) is dropped.
func (it *InstanceType) WithOfferings(offerings Offerings) *InstanceType {
	return &InstanceType{Name: it.Name, Requirements: it.Requirements, Offerings: offerings, Capacity: it.Capacity, Overhead: it.Overhead,
		VolumeLimits: it.VolumeLimits, Devices: it.Devices}
}

// Overhead is the capacity a node keeps from pods: the kubelet's --kube-reserved and
// --system-reserved, and the hard eviction thresholds it keeps free.
type Overhead struct {
	KubeReserved      corev1.ResourceList
	SystemReserved    corev1.ResourceList
	EvictionThreshold corev1.ResourceList
}

// Total is the sum of the overhead's parts.
func (o Overhead) Total() corev1.ResourceList {
	return scheduling.Merge(o.KubeReserved, o.SystemReserved, o.EvictionThreshold)
}

// Allocatable is what pods may request on a node of this type: Capacity less the Overhead,
// never negative. It is computed once.
func (it *InstanceType) Allocatable() corev1.ResourceList {
	it.allocatableOnce.Do(func() {
		it.allocatable = clampNonNegative(scheduling.Subtract(it.Capacity, it.Overhead.Total()))
	})
	return it.allocatable
}

// CompatibleWith reports whether a node meeting reqs can be of this type: the type's labels
// intersect reqs and some available offering is compatible with them.
func (it *InstanceType) CompatibleWith(reqs scheduling.Requirements) bool {
	return it.Requirements.Intersects(reqs) == nil && it.Offerings.HasCompatible(reqs)
}

// CheapestPrice is the price of the cheapest available offering compatible with reqs, or +Inf.
func (it *InstanceType) CheapestPrice(reqs scheduling.Requirements) float64 {
	return it.Offerings.Available().Compatible(reqs).CheapestPrice()
}

func clampNonNegative(list corev1.ResourceList) corev1.ResourceList {
	for name, q := range list {
		if q.Sign() < 0 {
			list[name] = *resource.NewQuantity(0, q.Format)
		}
	}
	return list
}
