package solver

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/scheduling"
)

// vec is a resource list with cpu, memory and pods as integers, the resources nearly every fit
// check is about, so the solver's arithmetic does not go through Quantity for them. Other
// resources (ephemeral-storage, GPUs, ...) stay in other.
type vec struct {
	milliCPU, memory, pods int64
	other                  corev1.ResourceList
}

func toVec(list corev1.ResourceList) vec {
	v := vec{}
	for name, q := range list {
		switch name {
		case corev1.ResourceCPU:
			v.milliCPU = q.MilliValue()
		case corev1.ResourceMemory:
			v.memory = q.Value()
		case corev1.ResourcePods:
			v.pods = q.Value()
		default:
			if v.other == nil {
				v.other = corev1.ResourceList{}
			}
			v.other[name] = q.DeepCopy()
		}
	}
	return v
}

// podVec is what a pod asks of a node, counting itself as one pod.
func podVec(pod *corev1.Pod) vec {
	v := toVec(scheduling.PodRequests(pod))
	v.pods = 1
	return v
}

func (v vec) plus(w vec) vec {
	out := vec{milliCPU: v.milliCPU + w.milliCPU, memory: v.memory + w.memory, pods: v.pods + w.pods}
	if len(v.other) > 0 || len(w.other) > 0 {
		out.other = scheduling.Merge(v.other, w.other)
	}
	return out
}

// fits reports whether v is within capacity.
func (v vec) fits(capacity vec) bool {
	if v.milliCPU > capacity.milliCPU || v.memory > capacity.memory || v.pods > capacity.pods {
		return false
	}
	return len(v.other) == 0 || scheduling.Fits(v.other, capacity.other) == nil
}

// list is v as a resource list, for NodeClaim requests.
func (v vec) list() corev1.ResourceList {
	out := corev1.ResourceList{}
	if v.milliCPU > 0 {
		out[corev1.ResourceCPU] = *resourceMilli(v.milliCPU)
	}
	if v.memory > 0 {
		out[corev1.ResourceMemory] = *resourceBinary(v.memory)
	}
	if v.pods > 0 {
		out[corev1.ResourcePods] = *resourceDecimal(v.pods)
	}
	for name, q := range v.other {
		out[name] = q.DeepCopy()
	}
	return out
}

// allocatables caches instance types' allocatable as vecs for one Plan.
type allocatables map[*cloudprovider.InstanceType]vec

func (a allocatables) of(it *cloudprovider.InstanceType) vec {
	v, ok := a[it]
	if !ok {
		v = toVec(it.Allocatable())
		a[it] = v
	}
	return v
}

// anyFits reports whether some type of its can hold requests. Types are sorted cheapest
// first, which is usually smallest first, so the scan starts from the end.
func (a allocatables) anyFits(its cloudprovider.InstanceTypes, requests vec) bool {
	for i := len(its) - 1; i >= 0; i-- {
		if requests.fits(a.of(its[i])) {
			return true
		}
	}
	return false
}

// anyHolds is anyFits over allocatables already looked up (run.typeVecs).
func anyHolds(allocatable []vec, requests vec) bool {
	for i := len(allocatable) - 1; i >= 0; i-- {
		if requests.fits(allocatable[i]) {
			return true
		}
	}
	return false
}

// typeVecs returns the allocatable of each of c's types, in order.
func (r *run) typeVecs(c *claim) []vec {
	if len(c.its) == 0 {
		return nil
	}
	if len(c.itsVecs) != len(c.its) || &c.its[0] != c.itsVecsAt {
		// A new slice: a copy of the claim may still hold the old one.
		vecs := make([]vec, len(c.its))
		for i, it := range c.its {
			vecs[i] = r.alloc.of(it)
		}
		c.itsVecs = vecs
		c.itsVecsAt = &c.its[0]
	}
	return c.itsVecs
}

// fitting returns the types of its that can hold requests, in order.
func (a allocatables) fitting(its cloudprovider.InstanceTypes, requests vec) cloudprovider.InstanceTypes {
	out := make(cloudprovider.InstanceTypes, 0, len(its))
	for _, it := range its {
		if requests.fits(a.of(it)) {
			out = append(out, it)
		}
	}
	return out
}

func resourceMilli(v int64) *resource.Quantity {
	return resource.NewMilliQuantity(v, resource.DecimalSI)
}
func resourceBinary(v int64) *resource.Quantity  { return resource.NewQuantity(v, resource.BinarySI) }
func resourceDecimal(v int64) *resource.Quantity { return resource.NewQuantity(v, resource.DecimalSI) }
