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

// InstanceTypeSource lists what a NodePool may launch, with offerings and prices (the cloud
// provider).
type InstanceTypeSource interface {
	GetInstanceTypes(ctx context.Context, nodePool *karpv1.NodePool) ([]*cloudprovider.InstanceType, error)
}

// Consolidation holds what both consolidation methods share: the simulator, prices and the
// SpotToSpotConsolidation gate.
type Consolidation struct {
	Simulator     Simulator
	InstanceTypes InstanceTypeSource
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
// NodeClaims whose consolidateAfter has passed (Consolidatable=True).
func (c *Consolidation) ShouldDisrupt(cand *Candidate) bool {
	return consolidatable(cand.NodeClaim, cand.NodePool)
}

func consolidatable(nc *karpv1.NodeClaim, np *karpv1.NodePool) bool {
	if np == nil {
		return false
	}
	policy := np.Spec.Disruption.ConsolidationPolicy
	return (policy == karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized || policy == karpv1.ConsolidationPolicyBalanced) &&
		!np.Spec.Disruption.ConsolidateAfter.IsNever() &&
		meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeConsolidatable)
}

// unconsolidatable marks the methods whose blocked nodes also get Unconsolidatable events.
func (c *Consolidation) unconsolidatable() bool { return true }

// MultiNodeConsolidation removes the largest prefix (up to MaxMultiNodeCandidates) of the
// candidates in disruption-cost order that can go with at most one cheaper replacement,
// found by binary search over the prefix length.
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
	sorted := m.order(cands, start)
	remaining := clonePerPool(allowed)
	var prefix []*Candidate
	for _, cand := range sorted {
		if len(prefix) == MaxMultiNodeCandidates {
			break
		}
		if remaining[cand.NodePool.Name] <= 0 {
			continue // single-node consolidation reports the budget
		}
		remaining[cand.NodePool.Name]--
		prefix = append(prefix, cand)
	}
	if len(prefix) < 2 {
		return nil, nil, nil // one node at a time is single-node consolidation's
	}
	prices := newPriceBook(m.InstanceTypes)
	var best *Command
	lo, hi := 2, len(prefix)
	for lo <= hi {
		if !m.now().Before(deadline) {
			consolidationTimeouts.WithLabelValues(ConsolidationTypeMulti).Inc()
			log.FromContext(ctx).Info("multi-node consolidation timed out, using the best command found", "timeout", timeout, "found", best != nil)
			break
		}
		mid := (lo + hi) / 2
		cmd, _, err := m.evaluate(ctx, c, prices, prefix[:mid], false)
		if err != nil {
			return nil, nil, err
		}
		if cmd != nil {
			best, lo = cmd, mid+1
		} else {
			hi = mid - 1
		}
	}
	if best != nil {
		best.Method = m.Name()
	}
	return best, nil, nil
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
	prices := newPriceBook(s.InstanceTypes)
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
	cmd, why, err := c.evaluate(ctx, cluster, newPriceBook(c.InstanceTypes), fresh, len(fresh) == 1)
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
	if why := sim.Refusal(cands); why != "" {
		return nil, why, sim, nil
	}
	cmd := &Command{Reason: c.Reason(), Candidates: cands, Destinations: sim.Destinations}
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

// cheaperReplacement narrows the replacement's instance types to those whose cheapest
// compatible offering costs less than the candidates together, never a candidate's own
// type, and applies the spot rules; it returns the replacement and the price of its cheapest
// type, or nil and why when none is left.
func (c *Consolidation) cheaperReplacement(ctx context.Context, prices *priceBook, cands []*Candidate, nc *karpv1.NodeClaim, single bool) (*karpv1.NodeClaim, float64, string, error) {
	current := 0.0
	allSpot := true
	ownTypes := sets.New[string]()
	for _, cand := range cands {
		p, err := prices.nodePrice(ctx, cand)
		if err != nil {
			return nil, 0, "", err
		}
		if math.IsInf(p, 1) {
			return nil, 0, fmt.Sprintf("can't price the current node %s", cand.Node.Name), nil
		}
		current += p
		ownTypes.Insert(cand.Node.Labels[corev1.LabelInstanceTypeStable])
		allSpot = allSpot && cand.Node.Labels[karpv1.CapacityTypeLabelKey] == karpv1.CapacityTypeSpot
	}
	reqs := scheduling.FromNodeSelectorRequirementsWithMinValues(nc.Spec.Requirements...)
	if allSpot {
		if ct := reqs.Get(karpv1.CapacityTypeLabelKey); ct == nil || ct.Has(karpv1.CapacityTypeSpot) {
			if !c.SpotToSpot {
				return nil, 0, msgSpotToSpotOff, nil
			}
			reqs.Add(scheduling.NewRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeSpot))
		}
	}
	its, err := prices.instanceTypes(ctx, cands[0].NodePool)
	if err != nil {
		return nil, 0, "", err
	}
	byName := make(map[string]*cloudprovider.InstanceType, len(its))
	for _, it := range its {
		byName[it.Name] = it
	}
	type priced struct {
		name  string
		price float64
	}
	var cheaper []priced
	typeReq := reqs.Get(corev1.LabelInstanceTypeStable)
	for _, name := range typeReq.Values() {
		it := byName[name]
		if it == nil || ownTypes.Has(name) {
			continue
		}
		if p := it.CheapestPrice(reqs); p < current {
			cheaper = append(cheaper, priced{name, p})
		}
	}
	if len(cheaper) == 0 {
		return nil, 0, msgNoCheaper, nil
	}
	slices.SortStableFunc(cheaper, func(a, b priced) int {
		if a.price != b.price {
			if a.price < b.price {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	if allSpot && single {
		if len(cheaper) < MinSpotToSpotInstanceTypes {
			return nil, 0, fmt.Sprintf("SpotToSpotConsolidation requires %d cheaper instance type options than the current candidate to consolidate, got %d",
				MinSpotToSpotInstanceTypes, len(cheaper)), nil
		}
		cheaper = cheaper[:MinSpotToSpotInstanceTypes]
	}
	names := make([]string, len(cheaper))
	for i, p := range cheaper {
		names[i] = p.name
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
	if allSpot {
		out.Labels[karpv1.CapacityTypeLabelKey] = karpv1.CapacityTypeSpot
	}
	return out, cheaper[0].price, "", nil
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

func clonePerPool(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// priceBook caches each NodePool's instance types, and Balanced's NodePool totals, for one
// decision.
type priceBook struct {
	src    InstanceTypeSource
	cache  map[string][]*cloudprovider.InstanceType
	totals map[string]poolTotals
}

func newPriceBook(src InstanceTypeSource) *priceBook {
	return &priceBook{src: src, cache: map[string][]*cloudprovider.InstanceType{}, totals: map[string]poolTotals{}}
}

func (b *priceBook) instanceTypes(ctx context.Context, np *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	if its, ok := b.cache[np.Name]; ok {
		return its, nil
	}
	if b.src == nil {
		return nil, fmt.Errorf("no instance type source to price nodepool %s", np.Name)
	}
	its, err := b.src.GetInstanceTypes(ctx, np)
	if err != nil {
		return nil, fmt.Errorf("listing instance types of nodepool %s: %w", np.Name, err)
	}
	b.cache[np.Name] = its
	return its, nil
}

// nodePrice is what the candidate's node costs per hour: the price of its instance type's
// offering in its zone and capacity type (and reservation, for reserved capacity), available
// or not; +Inf when the type or offering is unknown.
func (b *priceBook) nodePrice(ctx context.Context, cand *Candidate) (float64, error) {
	its, err := b.instanceTypes(ctx, cand.NodePool)
	if err != nil {
		return 0, err
	}
	labels := cand.Node.Labels
	name := labels[corev1.LabelInstanceTypeStable]
	price := math.Inf(1)
	for _, it := range its {
		if it.Name != name {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone() != labels[corev1.LabelTopologyZone] || o.CapacityType() != labels[karpv1.CapacityTypeLabelKey] {
				continue
			}
			if id := o.ReservationID(); id != "" && id != labels[cloudprovider.ReservationIDLabel] {
				continue
			}
			price = math.Min(price, o.Price)
		}
	}
	return price, nil
}
