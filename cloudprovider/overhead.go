package cloudprovider

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// DefaultVMMemoryOverheadPercent is the share of an instance type's advertised memory that the
// hypervisor and firmware keep, so the node reports less; Karpenter's default is 7.5 %.
const DefaultVMMemoryOverheadPercent = 0.075

// Eviction signals that reserve capacity, as the kubelet names them.
const (
	evictionSignalMemoryAvailable = "memory.available"
	evictionSignalNodeFSAvailable = "nodefs.available"
)

// Kubelet's default hard eviction thresholds for the signals that reduce allocatable.
var (
	defaultEvictionMemory         = resource.MustParse("100Mi")
	defaultEvictionNodeFSFraction = 0.10
)

// KubeletSettings are the kubelet options that change a node's allocatable (an EC2NodeClass's
// spec.kubelet, or a provider's defaults). Zero values mean the kubelet's and Karpenter's
// defaults.
type KubeletSettings struct {
	// MaxPods overrides the instance type's default pod density.
	MaxPods *int32
	// PodsPerCore caps pods at this many per vCPU; the lower of it and MaxPods applies.
	PodsPerCore *int32
	// KubeReserved replaces, per resource, the computed default (see DefaultKubeReserved).
	KubeReserved corev1.ResourceList
	// SystemReserved is reserved as given; nothing is reserved by default.
	SystemReserved corev1.ResourceList
	// EvictionHard and EvictionSoft map eviction signals to thresholds, quantities ("500Mi") or
	// percentages of capacity ("10%").
	EvictionHard map[string]string
	EvictionSoft map[string]string
}

// MemoryCapacity is the memory a node reports for an instance type advertised with memoryMiB:
// less the VM overhead (vmOverheadPercent, a fraction such as 0.075), rounded up to whole MiB.
func MemoryCapacity(memoryMiB int64, vmOverheadPercent float64) resource.Quantity {
	overheadMiB := int64(math.Ceil(float64(memoryMiB) * vmOverheadPercent))
	return *resource.NewQuantity((memoryMiB-overheadMiB)*1024*1024, resource.BinarySI)
}

// Pods is the pod capacity of a node with vcpus: settings.MaxPods if set, else defaultPods (the
// instance type's density), capped by settings.PodsPerCore × vcpus when PodsPerCore is positive.
func Pods(defaultPods, vcpus int64, settings KubeletSettings) int64 {
	pods := defaultPods
	if settings.MaxPods != nil {
		pods = int64(*settings.MaxPods)
	}
	if settings.PodsPerCore != nil && *settings.PodsPerCore > 0 {
		pods = min(pods, int64(*settings.PodsPerCore)*vcpus)
	}
	return pods
}

// cpuReservation is one band of Karpenter's (and the EKS AMIs') kube-reserved CPU formula: of the
// cores from fromCore up to toCore, fraction is reserved.
var cpuReservation = []struct {
	fromCore, toCore int64
	fraction         float64
}{
	{0, 1, 0.06},
	{1, 2, 0.01},
	{2, 4, 0.005},
	{4, math.MaxInt64, 0.0025},
}

// DefaultKubeReserved is Karpenter's default --kube-reserved for a node with vcpus and pods:
// cpu 6 % of the first core, 1 % of the second, 0.5 % of the third and fourth, 0.25 % of every
// further core (rounded up to a whole millicore); memory 11Mi per pod plus 255Mi; and 1Gi of
// ephemeral storage.
func DefaultKubeReserved(vcpus, pods int64) corev1.ResourceList {
	var microCores int64 // millicores × 1000, so quarter-percent bands stay exact
	for _, band := range cpuReservation {
		if vcpus <= band.fromCore {
			break
		}
		cores := min(vcpus, band.toCore) - band.fromCore
		microCores += int64(math.Round(float64(cores) * band.fraction * 1e6))
	}
	return corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity((microCores+999)/1000, resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity((11*pods+255)*1024*1024, resource.BinarySI),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Gi"),
	}
}

// KubeReserved is DefaultKubeReserved with each resource settings.KubeReserved names replaced.
func KubeReserved(vcpus, pods int64, settings KubeletSettings) corev1.ResourceList {
	reserved := DefaultKubeReserved(vcpus, pods)
	for name, q := range settings.KubeReserved {
		reserved[name] = q.DeepCopy()
	}
	return reserved
}

// EvictionThreshold is the capacity the kubelet keeps free before evicting pods: per resource
// (memory.available → memory, nodefs.available → ephemeral-storage) the larger of the hard and
// soft thresholds, percentages taken of capacity. A resource that neither names keeps the
// kubelet's default hard threshold: memory 100Mi, ephemeral storage 10 %.
func EvictionThreshold(capacity corev1.ResourceList, settings KubeletSettings) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	signals := []struct {
		signal   string
		resource corev1.ResourceName
		fallback func() resource.Quantity
	}{
		{evictionSignalMemoryAvailable, corev1.ResourceMemory, func() resource.Quantity { return defaultEvictionMemory.DeepCopy() }},
		{evictionSignalNodeFSAvailable, corev1.ResourceEphemeralStorage, func() resource.Quantity {
			return percentOf(capacity[corev1.ResourceEphemeralStorage], defaultEvictionNodeFSFraction)
		}},
	}
	for _, s := range signals {
		threshold, set, err := largestThreshold(s.signal, capacity[s.resource], settings.EvictionHard, settings.EvictionSoft)
		if err != nil {
			return nil, err
		}
		if !set {
			threshold = s.fallback()
		}
		out[s.resource] = threshold
	}
	return out, nil
}

// largestThreshold parses signal's threshold in each map and returns the largest, and whether any
// map set it.
func largestThreshold(signal string, capacity resource.Quantity, maps ...map[string]string) (resource.Quantity, bool, error) {
	var largest resource.Quantity
	set := false
	for _, m := range maps {
		value, ok := m[signal]
		if !ok {
			continue
		}
		q, err := parseThreshold(value, capacity)
		if err != nil {
			return resource.Quantity{}, false, fmt.Errorf("eviction threshold %s=%q: %w", signal, value, err)
		}
		if !set || q.Cmp(largest) > 0 {
			largest = q
		}
		set = true
	}
	return largest, set, nil
}

func parseThreshold(value string, capacity resource.Quantity) (resource.Quantity, error) {
	if pct, ok := strings.CutSuffix(value, "%"); ok {
		f, err := strconv.ParseFloat(pct, 64)
		if err != nil || f < 0 || f > 100 {
			return resource.Quantity{}, fmt.Errorf("percentage must be between 0%% and 100%%")
		}
		return percentOf(capacity, f/100), nil
	}
	q, err := resource.ParseQuantity(value)
	if err != nil {
		return resource.Quantity{}, err
	}
	if q.Sign() < 0 {
		return resource.Quantity{}, fmt.Errorf("quantity must not be negative")
	}
	return q, nil
}

// percentOf is fraction of q, rounded up to a whole unit.
func percentOf(q resource.Quantity, fraction float64) resource.Quantity {
	return *resource.NewQuantity(int64(math.Ceil(float64(q.Value())*fraction)), resource.BinarySI)
}

// NewOverhead is the overhead of a node with capacity under settings: kube-reserved (computed
// from capacity's cpu and pods unless overridden), system-reserved as given, and the eviction
// threshold.
func NewOverhead(capacity corev1.ResourceList, settings KubeletSettings) (Overhead, error) {
	eviction, err := EvictionThreshold(capacity, settings)
	if err != nil {
		return Overhead{}, err
	}
	cpu, pods := capacity[corev1.ResourceCPU], capacity[corev1.ResourcePods]
	systemReserved := corev1.ResourceList{}
	for name, q := range settings.SystemReserved {
		systemReserved[name] = q.DeepCopy()
	}
	return Overhead{
		KubeReserved:      KubeReserved(cpu.Value(), pods.Value(), settings),
		SystemReserved:    systemReserved,
		EvictionThreshold: eviction,
	}, nil
}
