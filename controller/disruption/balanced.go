package disruption

import (
	"context"
	"fmt"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/controller/cost"
)

// BalancedK is the k of consolidationPolicy Balanced (Karpenter's): a move is approved when
// its score — the share of the NodePool's cost it saves over the share of the NodePool's
// disruption cost it causes — is at least 1/k.
const BalancedK = 2.0

// EventConsolidationApproved is the event of an approved Balanced move (Karpenter's reason):
// on the NodeClaim for single-node consolidation, on the NodePool for multi-node.
const EventConsolidationApproved = "ConsolidationApproved"

// Decision label values of karpenter_consolidation_score and _moves_total.
const (
	moveApproved = "approved"
	moveRejected = "rejected"
)

// MoveScore is a move's score against one Balanced NodePool it removes nodes from.
type MoveScore struct {
	NodePool string
	// SavingsFraction is the move's savings over the NodePool's cost per hour;
	// DisruptionFraction the move's disruption cost over the NodePool's.
	SavingsFraction, DisruptionFraction float64
	Score                               float64
}

// Approved reports whether the score reaches 1/BalancedK.
func (s MoveScore) Approved() bool { return s.Score >= 1/BalancedK }

func (s MoveScore) String() string {
	return fmt.Sprintf("score %.2f (saves %.1f%% of nodepool %s's cost for %.1f%% of its disruption, needs %.2f)",
		s.Score, 100*s.SavingsFraction, s.NodePool, 100*s.DisruptionFraction, 1/BalancedK)
}

// poolTotals are a NodePool's cost per hour and disruption cost summed over its nodes.
type poolTotals struct {
	cost, disruption float64
}

// isBalanced reports whether np consolidates with the Balanced policy.
func isBalanced(np *karpv1.NodePool) bool {
	return np != nil && np.Spec.Disruption.ConsolidationPolicy == karpv1.ConsolidationPolicyBalanced
}

// scoringDisruptionCost is a node's disruption cost as Balanced weighs it: 1 for the node (so
// an empty node costs something and no total is zero) plus each moved pod's cost, negative
// ones counted as 0. Unlike the ordering cost it does not shrink with expiry.
func scoringDisruptionCost(cand *Candidate) float64 {
	total := 1.0
	for _, p := range cand.Pods {
		total += math.Max(0, podDisruptionCost(p))
	}
	return total
}

// poolTotals sums, once per decision, the NodePool's cost per hour and the disruption cost
// of its nodes that are not going away. The cost is the NodePool's cost as the cost metrics
// define it (cost.Counts, cost.Pricer.Of: launching NodeClaims at the offering they would
// launch with), so a score's savings fraction is over the joinery_nodepool_cost_per_hour the
// user sees; NodeClaims the catalog cannot price add nothing.
func (b *priceBook) poolTotals(ctx context.Context, c *Cluster, np *karpv1.NodePool) (poolTotals, error) {
	if t, ok := b.totals[np.Name]; ok {
		return t, nil
	}
	if _, err := b.pricer.InstanceTypes(ctx, np); err != nil {
		return poolTotals{}, err
	}
	var t poolTotals
	for _, nc := range c.NodeClaims {
		if nc.Labels[karpv1.NodePoolLabelKey] != np.Name {
			continue
		}
		node := c.NodeOf[nc.Name]
		if cost.Counts(nc) {
			o, ok, err := b.pricer.Of(ctx, nc, node)
			if err != nil {
				return poolTotals{}, err
			}
			if ok {
				t.cost += o.Price
			}
		}
		if node == nil || nc.DeletionTimestamp != nil || node.DeletionTimestamp != nil {
			continue
		}
		cand := &Candidate{NodeClaim: nc, Node: node, NodePool: np}
		for _, p := range c.PodsByNode[node.Name] {
			if IsReschedulable(p) {
				cand.Pods = append(cand.Pods, p)
			}
		}
		t.disruption += scoringDisruptionCost(cand)
	}
	b.totals[np.Name] = t
	return t, nil
}

// score scores a move — removing cands, launching a replacement costing replacementPrice
// per hour (0 for a delete) — against each Balanced NodePool it removes nodes from. Each
// NodePool is charged the replacement in proportion to the price of its candidates. It
// returns nil when no candidate's NodePool is Balanced.
func (b *priceBook) score(ctx context.Context, c *Cluster, cands []*Candidate, replacementPrice float64) ([]MoveScore, error) {
	type share struct {
		np                *karpv1.NodePool
		price, disruption float64
	}
	var shares []*share
	total := 0.0
	for _, cand := range cands {
		p, err := b.nodePrice(ctx, cand)
		if err != nil {
			return nil, err
		}
		if math.IsInf(p, 1) {
			p = 0 // an unpriced node saves nothing we can count
		}
		total += p
		i := slices.IndexFunc(shares, func(s *share) bool { return s.np.Name == cand.NodePool.Name })
		if i < 0 {
			shares = append(shares, &share{np: cand.NodePool})
			i = len(shares) - 1
		}
		shares[i].price += p
		shares[i].disruption += scoringDisruptionCost(cand)
	}
	var out []MoveScore
	for _, s := range shares {
		if !isBalanced(s.np) {
			continue
		}
		totals, err := b.poolTotals(ctx, c, s.np)
		if err != nil {
			return nil, err
		}
		savings := s.price
		if total > 0 {
			savings -= replacementPrice * s.price / total
		}
		ms := MoveScore{NodePool: s.np.Name}
		if totals.cost > 0 {
			ms.SavingsFraction = savings / totals.cost
		}
		if totals.disruption > 0 {
			ms.DisruptionFraction = s.disruption / totals.disruption
		}
		// No savings (or a loss) is never worth a disruption; the node baseline keeps the
		// disruption fraction above zero.
		if savings > 0 && ms.SavingsFraction > 0 && ms.DisruptionFraction > 0 {
			ms.Score = ms.SavingsFraction / ms.DisruptionFraction
		}
		out = append(out, ms)
	}
	return out, nil
}

// rejection returns why the move is refused (a *Refusal), or nil when every score approves
// it; record counts the rejected scores in the metrics.
func rejection(scores []MoveScore, record bool) error {
	var out error
	for _, s := range scores {
		if s.Approved() {
			continue
		}
		if record {
			recordMove(moveRejected, s.NodePool, karpv1.ConsolidationPolicyBalanced, &s.Score)
		}
		if out == nil {
			out = refused("Balanced consolidation: savings do not justify the disruption, %s", s)
		}
	}
	return out
}

// recordMove counts a consolidation move of nodePool, and observes its score when it has one.
func recordMove(decision, nodePool string, policy karpv1.ConsolidationPolicy, score *float64) {
	consolidationMoves.WithLabelValues(decision, nodePool, string(policy)).Inc()
	if score != nil {
		consolidationScore.WithLabelValues(decision, nodePool, string(policy)).Observe(*score)
	}
}

// recordApproved counts an executed consolidation command as an approved move of each
// NodePool it removes nodes from, and publishes ConsolidationApproved for its Balanced scores:
// on the candidate's NodeClaim for single-node consolidation, on the NodePool for multi-node.
func recordApproved(pub *publisher, cmd *Command) {
	seen := map[string]bool{}
	for _, cand := range cmd.Candidates {
		np := cand.NodePool
		if seen[np.Name] {
			continue
		}
		seen[np.Name] = true
		i := slices.IndexFunc(cmd.Scores, func(s MoveScore) bool { return s.NodePool == np.Name })
		if i < 0 {
			recordMove(moveApproved, np.Name, np.Spec.Disruption.ConsolidationPolicy, nil)
			continue
		}
		s := cmd.Scores[i]
		recordMove(moveApproved, np.Name, np.Spec.Disruption.ConsolidationPolicy, &s.Score)
		msg := fmt.Sprintf("Balanced consolidation approved %s of %s: %s", cmd.Decision(), candidateList(cmd.Candidates), s)
		if len(cmd.Candidates) == 1 {
			pub.publish(cand.NodeClaim, nil, corev1.EventTypeNormal, EventConsolidationApproved, "Disrupt", msg)
		} else {
			pub.recorder.Eventf(np, nil, corev1.EventTypeNormal, EventConsolidationApproved, "Disrupt", "%s", msg)
		}
	}
}
