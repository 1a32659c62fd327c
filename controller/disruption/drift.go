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

// Class: eventual, as Karpenter's drift: a NodeClaim with a terminationGracePeriod is drifted
// despite pods that block a graceful disruption.
func (d *Drift) Class() Class { return ClassEventual }

func (d *Drift) ConsolidationType() string { return "" }

func (d *Drift) Validation() Validation { return ValidateAfterDelay }

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
			cmd, err := d.staticCommand(ctx, c, cand)
			if r := refusalOf(err); r != nil {
				blocked = append(blocked, Blocked{NodeClaim: cand.NodeClaim, Node: cand.Node, Message: "Cannot disrupt Node: " + r.Message})
				continue
			}
			if err != nil {
				return nil, blocked, err
			}
			return cmd, blocked, nil
		}
		sim, err := d.Simulator.Simulate(ctx, c, []*Candidate{cand})
		if err != nil {
			return nil, blocked, err
		}
		if r := sim.Refusal(c, []*Candidate{cand}); r != nil {
			blocked = append(blocked, Blocked{NodeClaim: cand.NodeClaim, Node: cand.Node, Message: "Cannot disrupt Node: " + r.Error()})
			continue
		}
		return &Command{Method: d.Name(), Reason: d.Reason(), Candidates: []*Candidate{cand}, Replacements: sim.Replacements, Destinations: sim.Destinations}, blocked, nil
	}
	return nil, blocked, nil
}

// staticCommand replaces cand, a node of a static NodePool, with one NodeClaim from its
// template, or refuses to (*Refusal).
func (d *Drift) staticCommand(ctx context.Context, c *Cluster, cand *Candidate) (*Command, error) {
	np := cand.NodePool
	if d.InstanceTypes == nil {
		return nil, refused("static NodePools' nodes are not replaced here")
	}
	if limit, ok := np.Spec.Limits[resourceNodes]; ok {
		n := 0
		for _, nc := range c.NodeClaims {
			if nc.Labels[karpv1.NodePoolLabelKey] == np.Name {
				n++
			}
		}
		if int64(n) >= limit.Value() {
			return nil, refused("limits.nodes (%s) of static nodepool %s leaves no room for a replacement", limit.String(), np.Name)
		}
	}
	its, err := d.InstanceTypes.GetInstanceTypes(ctx, np)
	if err != nil {
		return nil, fmt.Errorf("instance types of nodepool %s: %w", np.Name, err)
	}
	repl, err := solver.StaticNodeClaim(np, its, d.Solver)
	if err != nil {
		return nil, &Refusal{Message: err.Error()}
	}
	cmd := &Command{Method: d.Name(), Reason: d.Reason(), Candidates: []*Candidate{cand}, Replacements: []*karpv1.NodeClaim{repl}, Destinations: map[types.UID]string{}}
	for _, p := range cand.Pods {
		cmd.Destinations[p.UID] = "replacement-0"
	}
	return cmd, nil
}

// Revalidate checks a drift command again before it runs: a static candidate's replacement is
// rebuilt; any other is simulated again.
func (d *Drift) Revalidate(ctx context.Context, c *Cluster, old *Command, fresh []*Candidate) (*Command, error) {
	if len(fresh) == 1 && fresh[0].NodePool.Spec.Replicas != nil {
		return d.staticCommand(ctx, c, fresh[0])
	}
	return resimulate(ctx, d.Simulator, c, old, fresh)
}

// resimulate is old over fresh with a new simulation, when old moves pods or launches.
func resimulate(ctx context.Context, sim Simulator, c *Cluster, old *Command, fresh []*Candidate) (*Command, error) {
	out := &Command{Method: old.Method, Reason: old.Reason, Candidates: fresh, Destinations: map[types.UID]string{}}
	if len(old.Replacements) == 0 && out.PodCount() == 0 {
		return out, nil
	}
	result, err := sim.Simulate(ctx, c, fresh)
	if err != nil {
		return nil, err
	}
	if err := result.Refusal(c, fresh); err != nil {
		return nil, err
	}
	out.Replacements, out.Destinations = result.Replacements, result.Destinations
	return out, nil
}

func driftedAt(c *Candidate) time.Time {
	if cond := meta.FindStatusCondition(c.NodeClaim.Status.Conditions, karpv1.ConditionTypeDrifted); cond != nil {
		return cond.LastTransitionTime.Time
	}
	return time.Time{}
}
