package disruption

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/scheduling"
	"github.com/joinery-dev/joinery/simulation"
)

// Time budgets of one consolidation decision (Karpenter's): when one runs out, the best
// command found so far is used and karpenter_voluntary_disruption_consolidation_timeouts_total counts it.
const (
	DefaultMultiNodeTimeout  = time.Minute
	DefaultSingleNodeTimeout = 3 * time.Minute
)

// MaxMultiNodeCandidates bounds the prefix multi-node consolidation searches.
const MaxMultiNodeCandidates = 100

// Consolidation types, the consolidation_type metric label (Karpenter's values).
const (
	ConsolidationTypeEmpty  = "empty"
	ConsolidationTypeMulti  = "multi"
	ConsolidationTypeSingle = "single"
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

	// looks remembers, per pass, the pods whose preferences were looked at (preferences.go);
	// GracefulMethods shares one between both methods.
	looks *preferenceLooks
}

func (c *Consolidation) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Reason is Underutilized for both methods.
func (c *Consolidation) Reason() string { return karpv1.DisruptionReasonUnderutilized }

// Class: graceful, as Karpenter's consolidation.
func (c *Consolidation) Class() Class { return ClassGraceful }

// Validation: Karpenter's consolidation delay.
func (c *Consolidation) Validation() Validation { return ValidateAfterConsolidationDelay }

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
func (m *MultiNodeConsolidation) ConsolidationType() string { return ConsolidationTypeMulti }

func (m *MultiNodeConsolidation) ComputeCommand(ctx context.Context, c *Cluster, allowed map[string]int, cands []*Candidate) (*Command, []Blocked, error) {
	timeout := m.Timeout
	if timeout == 0 {
		timeout = DefaultMultiNodeTimeout
	}
	start := m.now()
	if len(imminentNodes(c, cands, start)) > 0 {
		return nil, nil, nil // single-node consolidation, asked next, logs the wait
	}
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
		cmd, err := m.evaluate(ctx, c, prices, cands[:mid], false)
		if refusalOf(err) != nil {
			cmd, err = nil, nil
		}
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
func (s *SingleNodeConsolidation) ConsolidationType() string { return ConsolidationTypeSingle }

func (s *SingleNodeConsolidation) ComputeCommand(ctx context.Context, c *Cluster, allowed map[string]int, cands []*Candidate) (*Command, []Blocked, error) {
	timeout := s.Timeout
	if timeout == 0 {
		timeout = DefaultSingleNodeTimeout
	}
	start := s.now()
	if imminent := imminentNodes(c, cands, start); len(imminent) > 0 {
		log.FromContext(ctx).Info("consolidation waits for nodes about to become Consolidatable", "candidates", len(cands), "imminent", imminent)
		return nil, nil, nil
	}
	deadline := start.Add(timeout)
	prices := newPriceBook(s.InstanceTypes, c)
	var blocked []Blocked
	// fallback is the first replacing command found that moves pods onto another candidate;
	// a few more candidates are tried for one that does not (disturbance).
	var fallback *Command
	fallbackImminent := false
	lookahead := 0
	for _, cand := range s.order(cands, start) {
		if fallback != nil {
			if lookahead++; lookahead > maxLookahead {
				break
			}
		}
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
		if r := rejection(scores, true); r != nil {
			blocked = append(blocked, Blocked{NodeClaim: cand.NodeClaim, Node: cand.Node, Reason: EventUnconsolidatable, Message: r.Error()})
			continue
		}
		cmd, err := s.evaluate(ctx, c, prices, []*Candidate{cand}, true)
		if r := refusalOf(err); r != nil {
			blocked = append(blocked, Blocked{NodeClaim: cand.NodeClaim, Node: cand.Node, Reason: EventUnconsolidatable, Message: r.Message})
			continue
		}
		if err != nil {
			return nil, blocked, err
		}
		cmd.Method = s.Name()
		if fallback == nil {
			if disturbs, imminent := disturbance(c, cmd, cands, start); disturbs {
				fallback, fallbackImminent = cmd, imminent
				continue
			}
		}
		return cmd, blocked, nil
	}
	if fallback != nil && fallbackImminent && newlyConsolidatable(fallback, start) {
		// A node it moves pods onto is about to become a candidate: once the pass sees both,
		// it can replace that node first.
		return nil, blocked, nil
	}
	return fallback, blocked, nil
}

// imminentNodes are the nodes a consolidation pass waits for: those whose consolidateAfter
// ends within imminentWindow, when every candidate became Consolidatable less than
// imminentWindow ago (none otherwise). Choosing now would start the first commands a
// validation delay sooner, but the nodes about to join would be chosen only by a pass after
// those commands ran, and their pods moved without knowing where the others' go. After a
// scale-down every node's consolidateAfter ends within seconds of the others', so a pass that
// waits chooses them all together. The wait is bounded: once a candidate has been
// Consolidatable for imminentWindow, no pass waits. The loop wakes when a node becomes
// Consolidatable (Controller.NodeClaimChanged).
func imminentNodes(cluster *Cluster, cands []*Candidate, now time.Time) []string {
	for _, cand := range cands {
		if !becameConsolidatableWithin(cand.NodeClaim, now, imminentWindow) {
			return nil
		}
	}
	var imminent []string
	for _, nc := range cluster.NodeClaims {
		node := cluster.NodeOf[nc.Name]
		if node == nil || cluster.isDeleting(nc) || cluster.setAside(nc, node) {
			continue
		}
		if consolidatableWithin(nc, cluster.NodePoolOf(nc), now, imminentWindow) {
			imminent = append(imminent, nc.Name)
		}
	}
	return imminent
}

// maxLookahead bounds how many more candidates single-node consolidation simulates, once it
// has found a command that disturbs other nodes, for one that does not.
const maxLookahead = 8

// imminentWindow is how soon a node's consolidateAfter must end for a command that would move
// pods onto it to wait for it (waitsForDisturbed): the consolidation validation delay.
const imminentWindow = DefaultConsolidationValidationDelay

// disturbance reports whether cmd launches replacements and moves pods onto the node of
// another of cands, or of a node whose consolidateAfter ends within imminentWindow (then
// imminent is true too): the pods landing there restart that node's consolidateAfter, so a
// command for it chosen in the same pass is refused at its validation, and its pods move
// twice. A zone spread after a scale-down does this: a zone's pods must go to the zones below
// it, so replacing the nodes of the fullest zone first disturbs every other, while replacing
// those of the emptiest first keeps each zone's pods on its own replacement. A delete decision
// disturbs by design (its pods fill the others' room) and is never held back.
func disturbance(c *Cluster, cmd *Command, cands []*Candidate, now time.Time) (disturbs, imminent bool) {
	if len(cmd.Replacements) == 0 {
		return false, false
	}
	mine := map[string]bool{}
	for _, cand := range cmd.Candidates {
		mine[cand.Name()] = true
	}
	others := map[string]bool{}
	for _, cand := range cands {
		if !mine[cand.Name()] {
			others[cand.Name()], others[cand.Node.Name] = true, true
		}
	}
	seen := map[string]bool{}
	for _, dest := range cmd.Destinations {
		if seen[dest] {
			continue
		}
		seen[dest] = true
		if others[dest] {
			disturbs = true
		}
		if nc := c.nodeClaimAt(dest); nc != nil && !mine[nc.Name] && consolidatableWithin(nc, c.NodePoolOf(nc), now, imminentWindow) {
			disturbs, imminent = true, true
		}
	}
	return disturbs, imminent
}

// newlyConsolidatable reports whether every candidate of cmd became Consolidatable less than
// imminentWindow ago: a command that disturbs a node about to become a candidate waits for it
// only then, so it waits once, never longer.
func newlyConsolidatable(cmd *Command, now time.Time) bool {
	for _, cand := range cmd.Candidates {
		if !becameConsolidatableWithin(cand.NodeClaim, now, imminentWindow) {
			return false
		}
	}
	return true
}

// becameConsolidatableWithin reports whether nc is Consolidatable since less than window
// before now.
func becameConsolidatableWithin(nc *karpv1.NodeClaim, now time.Time, window time.Duration) bool {
	cond := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeConsolidatable)
	return cond != nil && cond.Status == metav1.ConditionTrue && now.Sub(cond.LastTransitionTime.Time) < window
}

// consolidatableWithin reports whether nc, not Consolidatable yet, becomes so within window of
// now: its NodePool consolidates underused nodes, and its consolidateAfter ends by then
// (ConsolidatableAt). One whose consolidateAfter ended less than window ago counts too: the
// podevents controller sets the condition moments after, and the last pod event is stored to
// the second, so several nodes whose consolidateAfter ends in the same second are seen
// Consolidatable one by one.
func consolidatableWithin(nc *karpv1.NodeClaim, np *karpv1.NodePool, now time.Time, window time.Duration) bool {
	if np == nil || !consolidatesUnderused(np) || meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeConsolidatable) {
		return false
	}
	at, ok := ConsolidatableAt(nc, np)
	return ok && at.Sub(now) <= window && now.Sub(at) < window
}

// ConsolidatableAt is when nc becomes Consolidatable: its NodePool's consolidateAfter after the
// later of its last pod event and its initialization. ok is false when it never does: no
// NodePool, consolidateAfter Never, or not initialized. The podevents controller sets the
// condition by it.
func ConsolidatableAt(nc *karpv1.NodeClaim, np *karpv1.NodePool) (at time.Time, ok bool) {
	initialized := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeInitialized)
	if np == nil || initialized == nil || initialized.Status != metav1.ConditionTrue || np.Spec.Disruption.ConsolidateAfter.IsNever() {
		return time.Time{}, false
	}
	since := nc.Status.LastPodEventTime.Time
	if initialized.LastTransitionTime.After(since) {
		since = initialized.LastTransitionTime.Time
	}
	return since.Add(*np.Spec.Disruption.ConsolidateAfter.Duration), true
}

// Revalidate recomputes the command over the fresh candidates after the validation delay:
// the same candidates must still be consolidatable the same way (a delete must still be a
// delete), with the replacement still cheaper.
func (c *Consolidation) Revalidate(ctx context.Context, cluster *Cluster, old *Command, fresh []*Candidate) (*Command, error) {
	prices := newPriceBook(c.InstanceTypes, cluster)
	cmd, err := c.evaluate(ctx, cluster, prices, fresh, len(fresh) == 1)
	if err != nil {
		return nil, err
	}
	if cmd.Decision() != old.Decision() {
		return nil, refused("the command would now %s instead of %s", cmd.Decision(), old.Decision())
	}
	cmd.Method = old.Method
	if err := keepRaises(ctx, prices, old, cmd); err != nil {
		return nil, err
	}
	return cmd, nil
}

// keepRaises carries to fresh, the command recomputed at validation, the planned requests that
// later commands of its pass raised old's replacements to (Cluster.reserve): the recomputed
// replacements count only fresh's own pods, and would launch too small for theirs. A raise
// none of the replacement's instance types holds is left out: the later command is then
// refused at its own validation, as it would be without the raise.
func keepRaises(ctx context.Context, prices *priceBook, old, fresh *Command) error {
	for i, r := range fresh.Replacements {
		if i >= len(old.Replacements) {
			break
		}
		raised, err := simulation.PlannedRequests(old.Replacements[i])
		if err != nil || raised == nil {
			continue
		}
		if i < len(fresh.narrowed) && fresh.narrowed[i] != nil {
			if names, err := fresh.narrowed[i].holding(raised); err == nil {
				simulation.RaisePlannedRequests(r, raised)
				setInstanceTypes(r, names)
			}
			continue
		}
		its, err := prices.instanceTypes(ctx, fresh.Candidates[0].NodePool)
		if err != nil {
			return err
		}
		reqs := scheduling.FromNodeSelectorRequirementsWithMinValues(r.Spec.Requirements...)
		allowed := reqs.Get(corev1.LabelInstanceTypeStable)
		if slices.ContainsFunc(its, func(it *cloudprovider.InstanceType) bool {
			return (allowed == nil || allowed.Has(it.Name)) && scheduling.Fits(raised, it.Allocatable()) == nil
		}) {
			simulation.RaisePlannedRequests(r, raised)
		}
	}
	return nil
}

// passRaises is what the replacements of the pass's earlier commands must hold for a command
// whose simulation raised them (by their names in the pass, Cluster.passReplacement), and, for
// one narrowed to its cheapest spot types, the types it then launches as: chosen again among
// its options for what it must hold, a *Refusal when too few of them hold it.
func passRaises(cluster *Cluster, raised map[string]corev1.ResourceList) ([]raise, error) {
	var out []raise
	for name, requests := range raised {
		earlier, i, ok := cluster.passReplacement(name)
		if !ok {
			continue
		}
		r := raise{replacement: earlier.Replacements[i], requests: requests}
		if i < len(earlier.narrowed) && earlier.narrowed[i] != nil {
			names, err := earlier.narrowed[i].holding(requests)
			if err != nil {
				return nil, err
			}
			r.instanceTypes = names
		}
		out = append(out, r)
	}
	return out, nil
}

// evaluate simulates removing cands: a delete when every pod fits on the rest of the cluster,
// a replace when they need exactly one new NodeClaim that can be cheaper than the candidates
// together (its instance types narrowed to those), a *Refusal saying why otherwise. Under
// Balanced the move must also score at least 1/BalancedK for each Balanced NodePool it removes
// nodes from.
func (c *Consolidation) evaluate(ctx context.Context, cluster *Cluster, prices *priceBook, cands []*Candidate, single bool) (*Command, error) {
	cmd, sim, err := c.judge(ctx, cluster, prices, cands, single, true)
	if refusalOf(err) != nil && sim != nil && len(sim.Replacements) > 0 {
		c.logPreferenceBlockers(ctx, cluster, prices, cands, single, sim)
	}
	return cmd, err
}

// judge is evaluate's decision; it also returns the simulation (nil when none completed).
// record counts Balanced rejections in the metrics.
func (c *Consolidation) judge(ctx context.Context, cluster *Cluster, prices *priceBook, cands []*Candidate, single, record bool) (*Command, *Simulation, error) {
	sim, err := c.Simulator.Simulate(ctx, cluster, cands)
	if err != nil {
		return nil, nil, err
	}
	if err := sim.Refusal(cluster, cands); err != nil {
		return nil, sim, err
	}
	raises, err := passRaises(cluster, sim.Raised)
	if err != nil {
		return nil, sim, err
	}
	cmd := &Command{Reason: c.Reason(), Candidates: cands, Destinations: sim.Destinations, prices: prices.pricer, raises: raises}
	replacementPrice := 0.0
	switch len(sim.Replacements) {
	case 0:
	case 1:
		replacement, price, narrowed, err := c.cheaperReplacement(ctx, prices, cands, sim.Replacements[0], single)
		if err != nil {
			return nil, sim, err
		}
		cmd.Replacements, replacementPrice = []*karpv1.NodeClaim{replacement}, price
		cmd.narrowed = []*narrowing{narrowed}
	default:
		return nil, sim, refused("can't replace with one node (would need %d)", len(sim.Replacements))
	}
	scores, err := prices.score(ctx, cluster, cands, replacementPrice)
	if err != nil {
		return nil, sim, err
	}
	if r := rejection(scores, record); r != nil {
		return nil, sim, r
	}
	cmd.Scores = scores
	return cmd, sim, nil
}
