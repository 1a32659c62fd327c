package solver

import (
	"cmp"
	"slices"

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

// anyHolds is anyFits over a claim's frontier (run.frontierOf).
func anyHolds(frontier []vec, requests vec) bool {
	for _, capacity := range frontier {
		if requests.fits(capacity) {
			return true
		}
	}
	return false
}

// frontierOf returns c's frontier, computed again when its changed otherwise than commit
// follows (keepFrontier).
func (r *run) frontierOf(c *claim) []vec {
	if len(c.its) == 0 {
		return nil
	}
	if !c.frontierFor(c.its) {
		c.setFrontier(frontierOf(r.alloc, c.its))
	}
	return c.frontier
}

// frontierFor reports whether c's frontier is its.
func (c *claim) frontierFor(its cloudprovider.InstanceTypes) bool {
	return len(its) > 0 && c.frontierLen == len(its) && c.frontierAt == &its[0]
}

func (c *claim) setFrontier(frontier []vec) {
	c.frontier, c.frontierAt, c.frontierLen = frontier, nil, len(c.its)
	if len(c.its) > 0 {
		c.frontierAt = &c.its[0]
	}
}

// frontierOf returns the allocatables of its that no other's dominates (one of equal ones):
// every type's allocatable fits within one of them. Sorted by cpu, memory and pods, largest
// first, a type's dominators come before it (or tie with it on all three, and then both
// may stay, which keeps the answer exact).
func frontierOf(a allocatables, its cloudprovider.InstanceTypes) []vec {
	vecs := make([]vec, len(its))
	for i, it := range its {
		vecs[i] = a.of(it)
	}
	slices.SortFunc(vecs, func(x, y vec) int {
		return cmp.Or(cmp.Compare(y.milliCPU, x.milliCPU), cmp.Compare(y.memory, x.memory), cmp.Compare(y.pods, x.pods))
	})
	out := vecs[:0]
	for _, v := range vecs {
		if !slices.ContainsFunc(out, v.fits) {
			out = append(out, v)
		}
	}
	return slices.Clip(out)
}

// keepFrontier follows commit's narrowing of c.its from prev to the types of prev that hold
// its requests: a type dropped holds less than the requests, so every type it dominated is
// dropped too, and the frontier is the old one's types that hold the requests.
func (c *claim) keepFrontier(prev cloudprovider.InstanceTypes) {
	if !c.frontierFor(prev) || len(c.its) == 0 {
		return
	}
	kept := make([]vec, 0, len(c.frontier))
	for _, f := range c.frontier {
		if c.requests.fits(f) {
			kept = append(kept, f)
		}
	}
	c.setFrontier(kept)
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
