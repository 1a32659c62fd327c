package disruption

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/simulation/solver"
)

// resourceNodes is the limit on a NodePool's node count.
const resourceNodes corev1.ResourceName = "nodes"

// Method is one automated graceful disruption method. The loop asks each in order for a
// command; the first command wins and the loop starts again from the first method after it.
// Consolidation (issue 12) plugs in as more Methods after Emptiness.
type Method interface {
	// Name names the method in logs, events and metrics (drift, emptiness, ...).
	Name() string
	// Reason is the disruption reason the method's budgets are counted under.
	Reason() string
	// ShouldDisrupt reports whether a candidate is one this method acts on.
	ShouldDisrupt(c *Candidate) bool
	// ComputeCommand picks, from the method's candidates in priority order, a command that
	// the budgets allow (allowed: remaining disruptions per NodePool for Reason) and the
	// simulation accepts; nil when there is none. Candidates passed over are returned with
	// why, for DisruptionBlocked events.
	ComputeCommand(ctx context.Context, c *Cluster, allowed map[string]int, cands []*Candidate) (*Command, []Blocked, error)
}

func budgetBlocked(cand *Candidate, reason string) Blocked {
	return Blocked{NodeClaim: cand.NodeClaim, Node: cand.Node, Message: fmt.Sprintf(
		"Cannot disrupt Node: no allowed disruptions for reason %s in nodepool %s (disruption budget)", reason, cand.NodePool.Name)}
}

// Drift replaces drifted NodeClaims (the Drifted condition), one per command, oldest drift
// first, with replacements launched and initialized before the candidate is drained.
//
// A drifted node of a static NodePool (spec.replicas) is replaced by a NodeClaim built from
// its NodePool's template (solver.StaticNodeClaim), as the static controller builds them,
// without a simulation: the provisioner never opens static NodeClaims, and the replacement
// is where the candidate's pods belong. limits.nodes must leave room for it.
type Drift struct {
	Simulator Simulator
	// InstanceTypes is the catalog static replacements are built from; nil blocks the drift
	// of static NodePools' nodes.
	InstanceTypes cloudprovider.InstanceTypeLister
	// Solver carries the provisioner's MinValuesPolicy and MaxInstanceTypes for static
	// replacements.
	Solver solver.Options
}

func (d *Drift) Name() string   { return "drift" }
func (d *Drift) Reason() string { return karpv1.DisruptionReasonDrifted }

func (d *Drift) ShouldDisrupt(c *Candidate) bool {
	return meta.IsStatusConditionTrue(c.NodeClaim.Status.Conditions, karpv1.ConditionTypeDrifted)
}

func (d *Drift) ComputeCommand(ctx context.Context, c *Cluster, allowed map[string]int, cands []*Candidate) (*Command, []Blocked, error) {
	sorted := slices.Clone(cands)
	slices.SortStableFunc(sorted, func(a, b *Candidate) int {
		return driftedAt(a).Compare(driftedAt(b))
	})
	var blocked []Blocked
	for _, cand := range sorted {
		if allowed[cand.NodePool.Name] <= 0 {
			blocked = append(blocked, budgetBlocked(cand, d.Reason()))
			continue
		}
		if cand.NodePool.Spec.Replicas != nil {
			cmd, why, err := d.staticCommand(ctx, c, cand)
			if err != nil {
				return nil, blocked, err
			}
			if why != "" {
				blocked = append(blocked, Blocked{NodeClaim: cand.NodeClaim, Node: cand.Node, Message: "Cannot disrupt Node: " + why})
				continue
			}
			return cmd, blocked, nil
		}
		sim, err := d.Simulator.Simulate(ctx, c, []*Candidate{cand})
		if err != nil {
			return nil, blocked, err
		}
		if why := sim.Refusal(c, []*Candidate{cand}); why != "" {
			blocked = append(blocked, Blocked{NodeClaim: cand.NodeClaim, Node: cand.Node, Message: "Cannot disrupt Node: " + why})
			continue
		}
		return &Command{Method: d.Name(), Reason: d.Reason(), Candidates: []*Candidate{cand}, Replacements: sim.Replacements, Destinations: sim.Destinations}, blocked, nil
	}
	return nil, blocked, nil
}

// staticCommand replaces cand, a node of a static NodePool, with one NodeClaim from its
// template, or says why it cannot.
func (d *Drift) staticCommand(ctx context.Context, c *Cluster, cand *Candidate) (*Command, string, error) {
	np := cand.NodePool
	if d.InstanceTypes == nil {
		return nil, "static NodePools' nodes are not replaced here", nil
	}
	if limit, ok := np.Spec.Limits[resourceNodes]; ok {
		n := 0
		for _, nc := range c.NodeClaims {
			if nc.Labels[karpv1.NodePoolLabelKey] == np.Name {
				n++
			}
		}
		if int64(n) >= limit.Value() {
			return nil, fmt.Sprintf("limits.nodes (%s) of static nodepool %s leaves no room for a replacement", limit.String(), np.Name), nil
		}
	}
	its, err := d.InstanceTypes.GetInstanceTypes(ctx, np)
	if err != nil {
		return nil, "", fmt.Errorf("instance types of nodepool %s: %w", np.Name, err)
	}
	repl, err := solver.StaticNodeClaim(np, its, d.Solver)
	if err != nil {
		return nil, err.Error(), nil
	}
	cmd := &Command{Method: d.Name(), Reason: d.Reason(), Candidates: []*Candidate{cand}, Replacements: []*karpv1.NodeClaim{repl}, Destinations: map[types.UID]string{}}
	for _, p := range cand.Pods {
		cmd.Destinations[p.UID] = "replacement-0"
	}
	return cmd, "", nil
}

// revalidate checks a drift command again before it runs: a static candidate's replacement is
// rebuilt; any other is simulated again, as the loop does for methods without revalidate.
func (d *Drift) revalidate(ctx context.Context, c *Cluster, old *Command, fresh []*Candidate) (*Command, string, error) {
	if len(fresh) == 1 && fresh[0].NodePool.Spec.Replicas != nil {
		return d.staticCommand(ctx, c, fresh[0])
	}
	out := &Command{Method: old.Method, Reason: old.Reason, Candidates: fresh, Destinations: map[types.UID]string{}}
	if len(old.Replacements) == 0 && out.PodCount() == 0 {
		return out, "", nil
	}
	sim, err := d.Simulator.Simulate(ctx, c, fresh)
	if err != nil {
		return nil, "", err
	}
	if why := sim.Refusal(c, fresh); why != "" {
		return nil, why, nil
	}
	out.Replacements, out.Destinations = sim.Replacements, sim.Destinations
	return out, "", nil
}

func driftedAt(c *Candidate) time.Time {
	if cond := meta.FindStatusCondition(c.NodeClaim.Status.Conditions, karpv1.ConditionTypeDrifted); cond != nil {
		return cond.LastTransitionTime.Time
	}
	return time.Time{}
}

// Emptiness deletes empty nodes — no pod but DaemonSet, static and finished pods — whose
// NodePool's consolidateAfter has passed (the Consolidatable condition), all at once up to
// each NodePool's Empty budget. Nothing moves, so nothing is simulated or launched.
type Emptiness struct{}

func (e *Emptiness) Name() string   { return "emptiness" }
func (e *Emptiness) Reason() string { return karpv1.DisruptionReasonEmpty }

func (e *Emptiness) consolidationType() string { return ConsolidationTypeEmpty }

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
