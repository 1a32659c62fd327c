package disruption

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// Emptiness deletes empty nodes — no pod but DaemonSet, static and finished pods — whose
// NodePool's consolidateAfter has passed (the Consolidatable condition), all at once up to
// each NodePool's Empty budget. Nothing moves, so nothing is simulated or launched.
type Emptiness struct{}

func (e *Emptiness) Name() string   { return "emptiness" }
func (e *Emptiness) Reason() string { return karpv1.DisruptionReasonEmpty }

// Class: graceful, as Karpenter's emptiness.
func (e *Emptiness) Class() Class { return ClassGraceful }

func (e *Emptiness) ConsolidationType() string { return ConsolidationTypeEmpty }

func (e *Emptiness) Validation() Validation { return ValidateAfterConsolidationDelay }

func (e *Emptiness) ShouldDisrupt(c *Candidate) bool {
	return len(c.Pods) == 0 && !c.NodePool.Spec.Disruption.ConsolidateAfter.IsNever() &&
		meta.IsStatusConditionTrue(c.NodeClaim.Status.Conditions, karpv1.ConditionTypeConsolidatable)
}

func (e *Emptiness) ComputeCommand(_ context.Context, _ *Cluster, allowed map[string]int, cands []*Candidate) (*Command, []Blocked, error) {
	remaining := make(map[string]int, len(allowed))
	for k, v := range allowed {
		remaining[k] = v
	}
	cmd := &Command{Method: e.Name(), Reason: e.Reason()}
	var blocked []Blocked
	for _, cand := range cands {
		if remaining[cand.NodePool.Name] <= 0 {
			blocked = append(blocked, budgetBlocked(cand, e.Reason()))
			continue
		}
		remaining[cand.NodePool.Name]--
		cmd.Candidates = append(cmd.Candidates, cand)
	}
	if len(cmd.Candidates) == 0 {
		return nil, blocked, nil
	}
	return cmd, blocked, nil
}

// Revalidate keeps the command over fresh: each candidate is still empty (ShouldDisrupt), so
// nothing moves.
func (e *Emptiness) Revalidate(_ context.Context, _ *Cluster, old *Command, fresh []*Candidate) (*Command, error) {
	return &Command{Method: old.Method, Reason: old.Reason, Candidates: fresh, Destinations: map[types.UID]string{}}, nil
}
