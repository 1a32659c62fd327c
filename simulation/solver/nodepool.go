package solver

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/scheduling"
	"github.com/joinery-dev/joinery/simulation"
)

// resourceNodes is the limit on a NodePool's node count.
const resourceNodes corev1.ResourceName = "nodes"

// pool is a NodePool prepared for one Plan.
type pool struct {
	np *karpv1.NodePool
	// reqs are the template's requirements and labels, and karpenter.sh/nodepool.
	reqs scheduling.Requirements
	// its are the instance types compatible with reqs, cheapest first.
	its cloudprovider.InstanceTypes
	// offered are all the NodePool's instance types, offerings known not to launch marked
	// unavailable: what tells unavailable offerings from requirements when its runs out.
	offered cloudprovider.InstanceTypes
	// used is what the NodePool's existing NodeClaims hold, counted against limits.
	used corev1.ResourceList
	// claims are this batch's new NodeClaims of the pool, which also count against limits.
	claims []*claim
	// byPrice caches, per requirements (their NodeClaim form), the pool's types compatible
	// with them, cheapest first (run.byPrice); position maps each of its to its index.
	byPrice  map[string]cloudprovider.InstanceTypes
	position map[*cloudprovider.InstanceType]int
}

// readyPools returns the NodePools that can be provisioned for, by weight (then name), and a
// reason for each one skipped. Offerings unavailable reports are marked unavailable.
func (s *Solver) readyPools(ctx context.Context, nodePools []*karpv1.NodePool, nodeClaims []*karpv1.NodeClaim, unavailable UnavailableFunc) ([]*pool, []simulation.NodePoolReason, error) {
	sorted := slices.Clone(nodePools)
	slices.SortFunc(sorted, func(a, b *karpv1.NodePool) int {
		return cmp.Or(cmp.Compare(weight(b), weight(a)), cmp.Compare(a.Name, b.Name))
	})
	var pools []*pool
	var skipped []simulation.NodePoolReason
	for _, np := range sorted {
		if np.DeletionTimestamp != nil {
			continue
		}
		if cond := meta.FindStatusCondition(np.Status.Conditions, "Ready"); cond != nil && cond.Status != metav1.ConditionTrue {
			skipped = append(skipped, skippedPool(np.Name, fmt.Sprintf("is not ready (%s)", cond.Reason), " "))
			continue
		}
		its, err := s.opts.InstanceTypes.GetInstanceTypes(ctx, np)
		if err != nil {
			skipped = append(skipped, skippedPool(np.Name, fmt.Sprintf("instance types: %v", err), ": "))
			continue
		}
		p := &pool{np: np, reqs: poolRequirements(np)}
		p.offered = withoutUnavailable(its, unavailable)
		p.its = p.offered.Compatible(p.reqs).OrderByPrice(p.reqs)
		p.used = usage(np.Name, nodeClaims, its)
		pools = append(pools, p)
	}
	return pools, skipped, nil
}

// incompatible lists the pools whose requirements leave no instance type, or (under the
// Strict minValues policy) too few to meet their minValues: no pod can land on them.
func (s *Solver) incompatible(pools []*pool) []simulation.IncompatibleNodePool {
	var out []simulation.IncompatibleNodePool
	for _, p := range pools {
		switch {
		case len(p.its) == 0:
			out = append(out, simulation.IncompatibleNodePool{NodePool: p.np})
		case s.opts.MinValuesPolicy == MinValuesStrict && p.its.MinValuesShortfall(p.reqs) != nil:
			out = append(out, simulation.IncompatibleNodePool{NodePool: p.np, MinValues: true})
		}
	}
	return out
}

func weight(np *karpv1.NodePool) int32 {
	if np.Spec.Weight == nil {
		return 0
	}
	return *np.Spec.Weight
}

// poolRequirements are what every node of np carries or chooses from.
func poolRequirements(np *karpv1.NodePool) scheduling.Requirements {
	reqs := scheduling.FromNodeSelectorRequirementsWithMinValues(np.Spec.Template.Spec.Requirements...)
	for key, value := range np.Spec.Template.ObjectMeta.Labels {
		reqs.Add(scheduling.NewRequirement(scheduling.NormalizeLabelKey(key), corev1.NodeSelectorOpIn, value))
	}
	reqs.Add(scheduling.NewRequirement(karpv1.NodePoolLabelKey, corev1.NodeSelectorOpIn, np.Name))
	return reqs
}

// unavailableIn is the offerings a plan over state skips: Options.Unavailable's and, for an
// OfferingState, the state's own record (nil: none).
func (s *Solver) unavailableIn(state ClusterState) UnavailableFunc {
	own, _ := state.(OfferingState)
	switch {
	case own == nil:
		return s.opts.Unavailable
	case s.opts.Unavailable == nil:
		return own.OfferingUnavailable
	}
	return func(capacityType, instanceType, zone string) bool {
		return s.opts.Unavailable(capacityType, instanceType, zone) || own.OfferingUnavailable(capacityType, instanceType, zone)
	}
}

// withoutUnavailable returns its with the offerings unavailable names marked unavailable;
// instance types are copied only when one of their offerings changes.
func withoutUnavailable(its []*cloudprovider.InstanceType, unavailable UnavailableFunc) cloudprovider.InstanceTypes {
	if unavailable == nil {
		return its
	}
	out := make(cloudprovider.InstanceTypes, 0, len(its))
	for _, it := range its {
		var offerings cloudprovider.Offerings
		for i, o := range it.Offerings {
			if o.Available && unavailable(o.CapacityType(), it.Name, o.Zone()) {
				if offerings == nil {
					offerings = slices.Clone(it.Offerings)
				}
				marked := *o
				marked.Available = false
				offerings[i] = &marked
			}
		}
		if offerings == nil {
			out = append(out, it)
			continue
		}
		out = append(out, it.WithOfferings(offerings))
	}
	return out
}

// usage sums the capacity of the NodePool's NodeClaims: the launched capacity when known,
// otherwise the largest of the instance types the NodeClaim allows (it may become any).
func usage(name string, nodeClaims []*karpv1.NodeClaim, its []*cloudprovider.InstanceType) corev1.ResourceList {
	used := corev1.ResourceList{}
	var nodes resource.Quantity
	one := *resource.NewQuantity(1, resource.DecimalSI)
	for _, nc := range nodeClaims {
		if nc.Labels[karpv1.NodePoolLabelKey] != name {
			continue
		}
		capacity := nc.Status.Capacity
		if len(capacity) == 0 {
			reqs := scheduling.FromNodeSelectorRequirementsWithMinValues(nc.Spec.Requirements...)
			var allowed cloudprovider.InstanceTypes
			for _, it := range its {
				if reqs.Get(corev1.LabelInstanceTypeStable).Has(it.Name) {
					allowed = append(allowed, it)
				}
			}
			capacity = maxCapacity(allowed)
		}
		// Summed in place: a new list per NodeClaim was most of a forked plan's setup.
		for name, q := range capacity {
			sum := used[name]
			sum.Add(q)
			used[name] = sum
		}
		nodes.Add(one)
	}
	if nodes.Sign() > 0 {
		used[resourceNodes] = nodes
	}
	return used
}

// maxCapacity is the per-resource maximum capacity of its.
func maxCapacity(its cloudprovider.InstanceTypes) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, it := range its {
		for name, q := range it.Capacity {
			if current, ok := out[name]; !ok || q.Cmp(current) > 0 {
				out[name] = q
			}
		}
	}
	return out
}

// maxAllocatable is the per-resource maximum allocatable of its: an upper bound for the node
// the Filters see while the instance type is still open.
func maxAllocatable(its cloudprovider.InstanceTypes) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, it := range its {
		for name, q := range it.Allocatable() {
			if current, ok := out[name]; !ok || q.Cmp(current) > 0 {
				out[name] = q
			}
		}
	}
	return out
}

// remaining is what the NodePool's limits leave for one more NodeClaim, or nil without limits.
// This batch's NodeClaims count with the largest capacity they may still become.
func (p *pool) remaining() corev1.ResourceList {
	if len(p.np.Spec.Limits) == 0 {
		return nil
	}
	left := scheduling.Subtract(p.np.Spec.Limits, p.used)
	for _, c := range p.claims {
		left = scheduling.Subtract(left, scheduling.Merge(maxCapacity(c.its), corev1.ResourceList{resourceNodes: *resource.NewQuantity(1, resource.DecimalSI)}))
	}
	// Only the limited resources matter; Subtract added the others as negatives.
	for name := range left {
		if _, limited := p.np.Spec.Limits[name]; !limited {
			delete(left, name)
		}
	}
	return left
}

// withinLimits keeps the instance types one node of which fits in remaining (nil: no limits).
func withinLimits(its cloudprovider.InstanceTypes, remaining corev1.ResourceList) cloudprovider.InstanceTypes {
	if remaining == nil {
		return its
	}
	var out cloudprovider.InstanceTypes
	for _, it := range its {
		if withinLimit(it, remaining) {
			out = append(out, it)
		}
	}
	return out
}

func withinLimit(it *cloudprovider.InstanceType, remaining corev1.ResourceList) bool {
	for name, left := range remaining {
		need := it.Capacity[name]
		if name == resourceNodes {
			need = *resource.NewQuantity(1, resource.DecimalSI)
		}
		if need.Cmp(left) > 0 {
			return false
		}
	}
	return true
}
