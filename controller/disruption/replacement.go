package disruption

import (
	"context"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/scheduling"
)

// The replacement's requirements: which instance types and offerings a consolidation
// replacement may launch with so that it is cheaper than what it replaces.

// MinSpotToSpotInstanceTypes is how many cheaper instance types a single-node spot-to-spot
// replacement needs (and how many it launches with), so that it does not chase the
// cheapest, most interrupted spot pool.
const MinSpotToSpotInstanceTypes = 15

// Messages of Unconsolidatable events (Karpenter's wording where it has one).
const (
	msgNoCheaper     = "can't replace with a lower-priced node"
	msgSpotToSpotOff = "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node"
)

// cheaperReplacement narrows the replacement's instance types to those that cost less than
// the candidates together whatever offering the launch picks (InstanceTypes.CheaperThan): when
// the candidates are on-demand and the replacement is cheaper only on spot, it is pinned to
// spot, so a spot shortage fails the launch (and rolls the command back) instead of falling
// back to a dearer on-demand node. A candidate's own type is a valid replacement when all its
// offerings the replacement may use are cheaper (spot instead of on-demand, a cheaper zone the
// requirements pin). Spot-to-spot applies its own rules. It returns the replacement and the
// price of its cheapest type, how a spot-to-spot replacement was narrowed to its cheapest
// types (nil for any other), or a *Refusal saying why none is left.
func (c *Consolidation) cheaperReplacement(ctx context.Context, prices *priceBook, cands []*Candidate, nc *karpv1.NodeClaim, single bool) (*karpv1.NodeClaim, float64, *narrowing, error) {
	current := 0.0
	// ownPrice is the dearest candidate of each candidate's type: several nodes of one type are
	// replaced by one of that type only when it is cheaper than one of them, or deleting all
	// but one would do the same with fewer disruptions (Karpenter's rule too).
	ownPrice := map[string]float64{}
	allSpot := true
	for _, cand := range cands {
		p, err := prices.nodePrice(ctx, cand)
		if err != nil {
			return nil, 0, nil, err
		}
		if math.IsInf(p, 1) {
			return nil, 0, nil, refused("can't price the current node %s", cand.Node.Name)
		}
		current += p
		if t := cand.Node.Labels[corev1.LabelInstanceTypeStable]; p > ownPrice[t] {
			ownPrice[t] = p
		}
		allSpot = allSpot && cand.Node.Labels[karpv1.CapacityTypeLabelKey] == karpv1.CapacityTypeSpot
	}
	reqs := scheduling.FromNodeSelectorRequirementsWithMinValues(nc.Spec.Requirements...)
	spotOnly := false
	if allSpot {
		if ct := reqs.Get(karpv1.CapacityTypeLabelKey); ct == nil || ct.Has(karpv1.CapacityTypeSpot) {
			if !c.SpotToSpot {
				return nil, 0, nil, refused(msgSpotToSpotOff)
			}
			reqs.Add(scheduling.NewRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeSpot))
			spotOnly = true
		}
	}
	its, err := prices.instanceTypes(ctx, cands[0].NodePool)
	if err != nil {
		return nil, 0, nil, err
	}
	offered := sets.New(reqs.Get(corev1.LabelInstanceTypeStable).Values()...)
	var options cloudprovider.InstanceTypes
	for _, it := range its {
		if offered.Has(it.Name) {
			options = append(options, it)
		}
	}
	options = c.withoutRecordedUnavailable(options)
	cheaper := options.CheaperThan(reqs, current)
	if ct := reqs.Get(karpv1.CapacityTypeLabelKey); len(cheaper) == 0 && !spotOnly && (ct == nil || (ct.Has(karpv1.CapacityTypeSpot) && ct.Len() > 1)) {
		// Cheaper only on spot: pin the replacement to spot.
		pinned := reqs.Clone()
		pinned.Add(scheduling.NewRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeSpot))
		if cheaper = options.CheaperThan(pinned, current); len(cheaper) > 0 {
			reqs, spotOnly = pinned, true
		}
	}
	cheaper = slices.DeleteFunc(cheaper, func(it *cloudprovider.InstanceType) bool {
		own, ok := ownPrice[it.Name]
		return ok && len(cloudprovider.InstanceTypes{it}.CheaperThan(reqs, own)) == 0
	})
	if len(cheaper) == 0 {
		return nil, 0, nil, refused(msgNoCheaper)
	}
	cheaper = cheaper.OrderByPrice(reqs)
	var narrowed *narrowing
	if allSpot && single {
		if len(cheaper) < MinSpotToSpotInstanceTypes {
			return nil, 0, nil, refused("SpotToSpotConsolidation requires %d cheaper instance type options than the current candidate to consolidate, got %d",
				MinSpotToSpotInstanceTypes, len(cheaper))
		}
		narrowed = &narrowing{options: cheaper, reqs: reqs.Clone()}
		if cheaper, err = narrowed.cheapest(); err != nil {
			return nil, 0, nil, err
		}
	}
	if err := cheaper.MinValuesShortfall(reqs); err != nil {
		return nil, 0, nil, refused("can't replace with a lower-priced node: %v", err)
	}
	names := instanceTypeNames(cheaper)
	out := nc.DeepCopy()
	reqs.Add(scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, names...))
	var minValues *int
	for _, r := range nc.Spec.Requirements {
		if r.Key == corev1.LabelInstanceTypeStable {
			minValues = r.MinValues
		}
	}
	out.Spec.Requirements = reqs.NodeSelectorRequirementsWithMinValues()
	for i := range out.Spec.Requirements {
		if out.Spec.Requirements[i].Key == corev1.LabelInstanceTypeStable {
			out.Spec.Requirements[i].MinValues = minValues
		}
	}
	setInstanceTypeLabel(out, names)
	if spotOnly {
		out.Labels[karpv1.CapacityTypeLabelKey] = karpv1.CapacityTypeSpot
	}
	return out, cheaper[0].CheapestPrice(reqs), narrowed, nil
}

// narrowing is how a single-node spot-to-spot replacement was narrowed to its cheapest
// MinSpotToSpotInstanceTypes types: the cheaper types it was chosen from, cheapest first, and
// the requirements they were taken with (minValues). A later command of the pass whose pods
// land on the replacement chooses them again for what it must then hold (holding): its fifteen
// cheapest types are for its own pods, often all too small for more.
type narrowing struct {
	options cloudprovider.InstanceTypes
	reqs    scheduling.Requirements
}

// cheapest is the MinSpotToSpotInstanceTypes cheapest options, and more when the
// requirements' minValues need them.
func (n *narrowing) cheapest() (cloudprovider.InstanceTypes, error) {
	out, err := n.options.Truncate(n.reqs, MinSpotToSpotInstanceTypes)
	if err != nil {
		return nil, refused("can't replace with a lower-priced node: %v", err)
	}
	return out, nil
}

// holding returns the names of the cheapest options that hold requests, chosen as cheapest
// does, or a *Refusal when fewer than MinSpotToSpotInstanceTypes of them do.
func (n *narrowing) holding(requests corev1.ResourceList) ([]string, error) {
	fit := &narrowing{reqs: n.reqs}
	for _, it := range n.options {
		if scheduling.Fits(requests, it.Allocatable()) == nil {
			fit.options = append(fit.options, it)
		}
	}
	if len(fit.options) < MinSpotToSpotInstanceTypes {
		return nil, refused("SpotToSpotConsolidation requires %d cheaper instance type options for a replacement holding the pods sent to it, got %d",
			MinSpotToSpotInstanceTypes, len(fit.options))
	}
	its, err := fit.cheapest()
	if err != nil {
		return nil, err
	}
	return instanceTypeNames(its), nil
}

// names lists every option: a replacement in a later command's view may launch as any of
// them, so that command's pods may land on it.
func (n *narrowing) names() []string { return instanceTypeNames(n.options) }

func instanceTypeNames(its cloudprovider.InstanceTypes) []string {
	names := make([]string, len(its))
	for i, it := range its {
		names[i] = it.Name
	}
	return names
}

// setInstanceTypes makes nc launch as one of names: its instance-type requirement's values
// (its minValues kept), and its instance-type label when there is one name.
func setInstanceTypes(nc *karpv1.NodeClaim, names []string) {
	for i := range nc.Spec.Requirements {
		if nc.Spec.Requirements[i].Key == corev1.LabelInstanceTypeStable {
			nc.Spec.Requirements[i].Operator = corev1.NodeSelectorOpIn
			nc.Spec.Requirements[i].Values = slices.Clone(names)
		}
	}
	setInstanceTypeLabel(nc, names)
}

// setInstanceTypeLabel labels nc with its instance type when names, the types it may launch
// as, are one, and removes the label otherwise.
func setInstanceTypeLabel(nc *karpv1.NodeClaim, names []string) {
	if nc.Labels == nil {
		nc.Labels = map[string]string{}
	}
	if len(names) == 1 {
		nc.Labels[corev1.LabelInstanceTypeStable] = names[0]
	} else {
		delete(nc.Labels, corev1.LabelInstanceTypeStable)
	}
}

// withoutRecordedUnavailable returns its with the offerings the unavailable record names
// (read by the simulation just run) marked unavailable, on copies: a replacement is only
// worth launching as an offering that may launch. Without this an on-demand candidate was
// replaced by spot while spot was exhausted; the launch failed and the rollback's back-off
// kept the candidate for 15 minutes after spot came back. Prices still count every offering
// (CheaperThan), since availability changes between a decision and its launch.
func (c *Consolidation) withoutRecordedUnavailable(its cloudprovider.InstanceTypes) cloudprovider.InstanceTypes {
	record, ok := c.Simulator.(offeringRecord)
	if !ok {
		return its
	}
	out := make(cloudprovider.InstanceTypes, len(its))
	for i, it := range its {
		out[i] = it
		for j, o := range it.Offerings {
			if !o.Available || !record.OfferingUnavailable(o.CapacityType(), it.Name, o.Zone()) {
				continue
			}
			if out[i] == it { // copy on first change: the provider's types are shared
				out[i] = it.WithOfferings(slices.Clone(it.Offerings))
			}
			marked := *o
			marked.Available = false
			out[i].Offerings[j] = &marked
		}
	}
	return out
}
