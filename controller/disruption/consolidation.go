package disruption

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/controller/cost"
	"github.com/joinery-dev/joinery/scheduling"
	"github.com/joinery-dev/joinery/simulation/buffer"
)

// Time budgets of one consolidation decision (Karpenter's): when one runs out, the best
// command found so far is used and karpenter_voluntary_disruption_consolidation_timeouts_total counts it.
const (
	DefaultMultiNodeTimeout  = time.Minute
	DefaultSingleNodeTimeout = 3 * time.Minute
)

// MaxMultiNodeCandidates bounds the prefix multi-node consolidation searches.
const MaxMultiNodeCandidates = 100

// MinSpotToSpotInstanceTypes is how many cheaper instance types a single-node spot-to-spot
// replacement needs (and how many it launches with), so that it does not chase the
// cheapest, most interrupted spot pool.
const MinSpotToSpotInstanceTypes = 15

// Consolidation types, the consolidation_type metric label (Karpenter's values).
const (
	ConsolidationTypeEmpty  = "empty"
	ConsolidationTypeMulti  = "multi"
	ConsolidationTypeSingle = "single"
)

// Messages of Unconsolidatable events (Karpenter's wording where it has one).
const (
	msgNoCheaper     = "can't replace with a lower-priced node"
	msgSpotToSpotOff = "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node"
)

// Consolidation holds what both consolidation methods share: the simulator, prices and the
// SpotToSpotConsolidation gate.
type Consolidation struct {
	Simulator     Simulator
	InstanceTypes cloudprovider.InstanceTypeLister
	// SpotToSpot is the SpotToSpotConsolidation feature gate.
	SpotToSpot bool
	// Timeout is the decision's time budget (0: the method's default).
	Timeout time.Duration
	// Now is the clock of the time budget and of expiry in the disruption cost (nil: time.Now).
	Now func() time.Time
}

func (c *Consolidation) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Consolidation) simulator() Simulator { return c.Simulator }

// Reason is Underutilized for both methods.
func (c *Consolidation) Reason() string { return karpv1.DisruptionReasonUnderutilized }

// ShouldDisrupt: NodePools with consolidationPolicy WhenEmptyOrUnderutilized or Balanced,
// NodeClaims whose consolidateAfter has passed (Consolidatable=True), with pods to move. Empty
// nodes are Emptiness's (Karpenter's rule), so a budget for reason Empty protects them.
func (c *Consolidation) ShouldDisrupt(cand *Candidate) bool {
	return len(cand.Pods) > 0 && consolidatable(cand.NodeClaim, cand.NodePool)
}

func consolidatable(nc *karpv1.NodeClaim, np *karpv1.NodePool) bool {
	if np == nil {
		return false
	}
	return consolidatesUnderused(np) && !np.Spec.Disruption.ConsolidateAfter.IsNever() &&
		meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeConsolidatable)
}

// consolidatesUnderused reports whether np's consolidationPolicy lets consolidation move the
// pods of its underused nodes (not only delete empty ones).
func consolidatesUnderused(np *karpv1.NodePool) bool {
	policy := np.Spec.Disruption.ConsolidationPolicy
	return policy == karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized || policy == karpv1.ConsolidationPolicyBalanced
}

// unconsolidatable marks the methods whose blocked nodes also get Unconsolidatable events.
func (c *Consolidation) unconsolidatable() bool { return true }

// MultiNodeConsolidation removes, within one NodePool, the largest prefix (up to
// MaxMultiNodeCandidates and the NodePool's budget) of its candidates in disruption-cost order
// that can go with at most one cheaper replacement, found by binary search over the prefix
// length. NodePools are tried in the order of their cheapest candidate; the first with a
// command wins. Karpenter searches one prefix of all NodePools' candidates together, which
// gets stuck when NodePools cannot share a replacement: every mixed prefix needs one
// replacement per NodePool, so nothing is consolidated.
type MultiNodeConsolidation struct {
	Consolidation
}

func (m *MultiNodeConsolidation) Name() string              { return "multi-node-consolidation" }
func (m *MultiNodeConsolidation) consolidationType() string { return ConsolidationTypeMulti }

func (m *MultiNodeConsolidation) ComputeCommand(ctx context.Context, c *Cluster, allowed map[string]int, cands []*Candidate) (*Command, []Blocked, error) {
	timeout := m.Timeout
	if timeout == 0 {
		timeout = DefaultMultiNodeTimeout
	}
	start := m.now()
	deadline := start.Add(timeout)
	var pools []string
	prefixes := map[string][]*Candidate{}
	for _, cand := range m.order(cands, start) {
		name := cand.NodePool.Name
		if len(prefixes[name]) >= min(MaxMultiNodeCandidates, allowed[name]) {
			continue // single-node consolidation reports the budget
		}
		if prefixes[name] == nil {
			pools = append(pools, name)
		}
		prefixes[name] = append(prefixes[name], cand)
	}
	prices := newPriceBook(m.InstanceTypes, c)
	for _, name := range pools {
		prefix := prefixes[name]
		if len(prefix) < 2 {
			continue // one node at a time is single-node consolidation's
		}
		best, timedOut, err := m.searchPrefix(ctx, c, prices, prefix, deadline)
		if err != nil {
			return nil, nil, err
		}
		if timedOut {
			consolidationTimeouts.WithLabelValues(ConsolidationTypeMulti).Inc()
			log.FromContext(ctx).Info("multi-node consolidation timed out, using the best command found", "timeout", timeout, "nodepool", name, "found", best != nil)
		}
		if best != nil {
			best.Method = m.Name()
			return best, nil, nil
		}
		if timedOut {
			break
		}
	}
	return nil, nil, nil
}

// searchPrefix finds, by binary search over the length, the longest prefix of cands (at least
// two) that can go with at most one cheaper replacement; nil when none can. At the deadline it
// stops with the best command found so far and reports the timeout.
func (m *MultiNodeConsolidation) searchPrefix(ctx context.Context, c *Cluster, prices *priceBook, cands []*Candidate, deadline time.Time) (*Command, bool, error) {
	var best *Command
	lo, hi := 2, len(cands)
	for lo <= hi {
		if !m.now().Before(deadline) {
			return best, true, nil
		}
		mid := (lo + hi) / 2
		cmd, _, err := m.evaluate(ctx, c, prices, cands[:mid], false)
		if err != nil {
			return nil, false, err
		}
		if cmd != nil {
			best, lo = cmd, mid+1
		} else {
			hi = mid - 1
		}
	}
	return best, false, nil
}

// SingleNodeConsolidation tries each candidate in disruption-cost order; the first that can
// be deleted, or replaced by one cheaper node, wins.
type SingleNodeConsolidation struct {
	Consolidation
}

func (s *SingleNodeConsolidation) Name() string              { return "single-node-consolidation" }
func (s *SingleNodeConsolidation) consolidationType() string { return ConsolidationTypeSingle }

func (s *SingleNodeConsolidation) ComputeCommand(ctx context.Context, c *Cluster, allowed map[string]int, cands []*Candidate) (*Command, []Blocked, error) {
	timeout := s.Timeout
	if timeout == 0 {
		timeout = DefaultSingleNodeTimeout
	}
	start := s.now()
	deadline := start.Add(timeout)
	prices := newPriceBook(s.InstanceTypes, c)
	var blocked []Blocked
	for _, cand := range s.order(cands, start) {
		if allowed[cand.NodePool.Name] <= 0 {
			blocked = append(blocked, budgetBlocked(cand, s.Reason()))
			continue
		}
		if !s.now().Before(deadline) {
			consolidationTimeouts.WithLabelValues(ConsolidationTypeSingle).Inc()
			log.FromContext(ctx).Info("single-node consolidation timed out", "timeout", timeout)
			break
		}
		// Under Balanced, a node whose deletion (its best move) scores too low is not simulated.
		scores, err := prices.score(ctx, c, []*Candidate{cand}, 0)
		if err != nil {
			return nil, blocked, err
		}
		if why := rejection(scores, true); why != "" {
			blocked = append(blocked, Blocked{NodeClaim: cand.NodeClaim, Node: cand.Node, Reason: EventUnconsolidatable, Message: why})
			continue
		}
		cmd, why, err := s.evaluate(ctx, c, prices, []*Candidate{cand}, true)
		if err != nil {
			return nil, blocked, err
		}
		if cmd != nil {
			cmd.Method = s.Name()
			return cmd, blocked, nil
		}
		blocked = append(blocked, Blocked{NodeClaim: cand.NodeClaim, Node: cand.Node, Reason: EventUnconsolidatable, Message: why})
	}
	return nil, blocked, nil
}

// revalidate recomputes the command over the fresh candidates after the validation delay:
// the same candidates must still be consolidatable the same way (a delete must still be a
// delete), with the replacement still cheaper.
func (c *Consolidation) revalidate(ctx context.Context, cluster *Cluster, old *Command, fresh []*Candidate) (*Command, string, error) {
	cmd, why, err := c.evaluate(ctx, cluster, newPriceBook(c.InstanceTypes, cluster), fresh, len(fresh) == 1)
	if err != nil || cmd == nil {
		return nil, why, err
	}
	if cmd.Decision() != old.Decision() {
		return nil, fmt.Sprintf("the command would now %s instead of %s", cmd.Decision(), old.Decision()), nil
	}
	cmd.Method = old.Method
	return cmd, "", nil
}

// evaluate simulates removing cands: a delete when every pod fits on the rest of the cluster,
// a replace when they need exactly one new NodeClaim that can be cheaper than the candidates
// together (its instance types narrowed to those), nil and why otherwise. Under Balanced the
// move must also score at least 1/BalancedK for each Balanced NodePool it removes nodes from.
func (c *Consolidation) evaluate(ctx context.Context, cluster *Cluster, prices *priceBook, cands []*Candidate, single bool) (*Command, string, error) {
	cmd, why, sim, err := c.judge(ctx, cluster, prices, cands, single, true)
	if err == nil && cmd == nil && sim != nil && len(sim.Replacements) > 0 {
		c.logPreferenceBlockers(ctx, cluster, prices, cands, single, sim)
	}
	return cmd, why, err
}

// judge is evaluate's decision; it also returns the simulation (nil when none completed).
// record counts Balanced rejections in the metrics.
func (c *Consolidation) judge(ctx context.Context, cluster *Cluster, prices *priceBook, cands []*Candidate, single, record bool) (*Command, string, *Simulation, error) {
	sim, err := c.Simulator.Simulate(ctx, cluster, cands)
	if err != nil {
		return nil, "", nil, err
	}
	if why := sim.Refusal(cluster, cands); why != "" {
		return nil, why, sim, nil
	}
	cmd := &Command{Reason: c.Reason(), Candidates: cands, Destinations: sim.Destinations, prices: prices.pricer}
	replacementPrice := 0.0
	switch len(sim.Replacements) {
	case 0:
	case 1:
		replacement, price, why, err := c.cheaperReplacement(ctx, prices, cands, sim.Replacements[0], single)
		if err != nil || replacement == nil {
			return nil, why, sim, err
		}
		cmd.Replacements, replacementPrice = []*karpv1.NodeClaim{replacement}, price
	default:
		return nil, fmt.Sprintf("can't replace with one node (would need %d)", len(sim.Replacements)), sim, nil
	}
	scores, err := prices.score(ctx, cluster, cands, replacementPrice)
	if err != nil {
		return nil, "", sim, err
	}
	if why := rejection(scores, record); why != "" {
		return nil, why, sim, nil
	}
	cmd.Scores = scores
	return cmd, "", sim, nil
}

// cheaperReplacement narrows the replacement's instance types to those that cost less than
// the candidates together whatever offering the launch picks (InstanceTypes.CheaperThan): when
// the candidates are on-demand and the replacement is cheaper only on spot, it is pinned to
// spot, so a spot shortage fails the launch (and rolls the command back) instead of falling
// back to a dearer on-demand node. A candidate's own type is a valid replacement when all its
// offerings the replacement may use are cheaper (spot instead of on-demand, a cheaper zone the
// requirements pin). Spot-to-spot applies its own rules. It returns the replacement and the
// price of its cheapest type, or nil and why when none is left.
func (c *Consolidation) cheaperReplacement(ctx context.Context, prices *priceBook, cands []*Candidate, nc *karpv1.NodeClaim, single bool) (*karpv1.NodeClaim, float64, string, error) {
	current := 0.0
	// ownPrice is the dearest candidate of each candidate's type: several nodes of one type are
	// replaced by one of that type only when it is cheaper than one of them, or deleting all
	// but one would do the same with fewer disruptions (Karpenter's rule too).
	ownPrice := map[string]float64{}
	allSpot := true
	for _, cand := range cands {
		p, err := prices.nodePrice(ctx, cand)
		if err != nil {
			return nil, 0, "", err
		}
		if math.IsInf(p, 1) {
			return nil, 0, fmt.Sprintf("can't price the current node %s", cand.Node.Name), nil
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
				return nil, 0, msgSpotToSpotOff, nil
			}
			reqs.Add(scheduling.NewRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeSpot))
			spotOnly = true
		}
	}
	its, err := prices.instanceTypes(ctx, cands[0].NodePool)
	if err != nil {
		return nil, 0, "", err
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
		return nil, 0, msgNoCheaper, nil
	}
	cheaper = cheaper.OrderByPrice(reqs)
	if allSpot && single {
		if len(cheaper) < MinSpotToSpotInstanceTypes {
			return nil, 0, fmt.Sprintf("SpotToSpotConsolidation requires %d cheaper instance type options than the current candidate to consolidate, got %d",
				MinSpotToSpotInstanceTypes, len(cheaper)), nil
		}
		// The 15 cheapest, and more when the requirements' minValues need them.
		if cheaper, err = cheaper.Truncate(reqs, MinSpotToSpotInstanceTypes); err != nil {
			return nil, 0, fmt.Sprintf("can't replace with a lower-priced node: %v", err), nil
		}
	}
	if err := cheaper.MinValuesShortfall(reqs); err != nil {
		return nil, 0, fmt.Sprintf("can't replace with a lower-priced node: %v", err), nil
	}
	names := make([]string, len(cheaper))
	for i, it := range cheaper {
		names[i] = it.Name
	}
	out := nc.DeepCopy()
	reqs.Add(scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, names...))
	var minValues *int
	for _, r := range nc.Spec.Requirements {
		if r.Key == corev1.LabelInstanceTypeStable {
			minValues = r.MinValues
		}
	}
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	out.Spec.Requirements = reqs.NodeSelectorRequirementsWithMinValues()
	for i := range out.Spec.Requirements {
		if out.Spec.Requirements[i].Key == corev1.LabelInstanceTypeStable {
			out.Spec.Requirements[i].MinValues = minValues
		}
	}
	if len(names) == 1 {
		out.Labels[corev1.LabelInstanceTypeStable] = names[0]
	} else {
		delete(out.Labels, corev1.LabelInstanceTypeStable)
	}
	if spotOnly {
		out.Labels[karpv1.CapacityTypeLabelKey] = karpv1.CapacityTypeSpot
	}
	return out, cheaper[0].CheapestPrice(reqs), "", nil
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

// order sorts candidates by disruption cost, cheapest to disrupt first (ties by name).
func (c *Consolidation) order(cands []*Candidate, now time.Time) []*Candidate {
	type costed struct {
		cand *Candidate
		cost float64
	}
	cs := make([]costed, len(cands))
	for i, cand := range cands {
		cs[i] = costed{cand, DisruptionCost(cand, now)}
	}
	slices.SortStableFunc(cs, func(a, b costed) int {
		if a.cost != b.cost {
			if a.cost < b.cost {
				return -1
			}
			return 1
		}
		return strings.Compare(a.cand.Name(), b.cand.Name())
	})
	out := make([]*Candidate, len(cs))
	for i := range cs {
		out[i] = cs[i].cand
	}
	return out
}

// PodDeletionCostAnnotationKey is the ReplicaSet controller's pod-deletion-cost annotation.
const PodDeletionCostAnnotationKey = "controller.kubernetes.io/pod-deletion-cost"

// DisruptionCost is how costly removing the candidate is: per pod 1 (a CapacityBuffer
// virtual pod BufferPodCost, nothing more), plus its deletion cost
// (scaled by 2^-27) and its priority (scaled by 2^-25), each pod's share kept in [-10, 10];
// the sum is scaled by the fraction of the NodeClaim's expireAfter still ahead, so nodes
// expiring soon are cheaper to disrupt.
func DisruptionCost(cand *Candidate, now time.Time) float64 {
	total := 0.0
	for _, p := range cand.Pods {
		if buffer.IsVirtual(p) {
			total += BufferPodCost
			continue
		}
		total += podDisruptionCost(p)
	}
	if d := cand.NodeClaim.Spec.ExpireAfter.Duration; d != nil && *d > 0 {
		left := cand.NodeClaim.CreationTimestamp.Add(*d).Sub(now)
		total *= math.Max(0, math.Min(1, float64(left)/float64(*d)))
	}
	return total
}

// podDisruptionCost is one pod's share of a node's disruption cost: 1, plus its deletion cost
// scaled by 2^-27 and its priority scaled by 2^-25, kept in [-10, 10].
func podDisruptionCost(p *corev1.Pod) float64 {
	cost := 1.0
	if v, ok := p.Annotations[PodDeletionCostAnnotationKey]; ok {
		if n, err := strconv.ParseFloat(v, 64); err == nil {
			cost += n / math.Pow(2, 27)
		}
	}
	if p.Spec.Priority != nil {
		cost += float64(*p.Spec.Priority) / math.Pow(2, 25)
	}
	return math.Max(-10, math.Min(10, cost))
}

// priceBook is one decision's prices: the price book every binary prices with (cost.Pricer,
// which lists each NodePool's instance types once) and Balanced's NodePool totals.
type priceBook struct {
	pricer *cost.Pricer
	totals map[string]poolTotals
}

func newPriceBook(src cloudprovider.InstanceTypeLister, c *Cluster) *priceBook {
	pools := make([]*karpv1.NodePool, 0, len(c.NodePools))
	for _, np := range c.NodePools {
		pools = append(pools, np)
	}
	return &priceBook{pricer: cost.NewPricer(src, pools), totals: map[string]poolTotals{}}
}

func (b *priceBook) instanceTypes(ctx context.Context, np *karpv1.NodePool) (cloudprovider.InstanceTypes, error) {
	return b.pricer.InstanceTypes(ctx, np)
}

// nodePrice is what the candidate's node costs per hour (cost.Pricer.Running: the offering
// its labels name, available or not); +Inf when the type or offering is unknown.
func (b *priceBook) nodePrice(ctx context.Context, cand *Candidate) (float64, error) {
	if _, err := b.pricer.InstanceTypes(ctx, cand.NodePool); err != nil {
		return 0, err
	}
	o, ok, err := b.pricer.Running(ctx, cand.NodeClaim, cand.Node)
	if err != nil || !ok {
		return math.Inf(1), err
	}
	return o.Price, nil
}
