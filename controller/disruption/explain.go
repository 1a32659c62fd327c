package disruption

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// NodeCheck is one of the loop's predicates over one node, with its outcome.
type NodeCheck struct {
	Name   string
	OK     bool
	Detail string
}

// NodeExplanation is what the disruption loop's own predicates and methods decide about one
// node: `joinery explain node` prints it, so its verdict cannot differ from the controller's.
type NodeExplanation struct {
	// NodeClaim owns the node; nil when none does. NodePool is its NodePool, nil when gone.
	NodeClaim *karpv1.NodeClaim
	NodePool  *karpv1.NodePool
	Checks    []NodeCheck
	// Method and Command: the first method, in the loop's order, whose simulation of the node
	// alone makes a command; empty and nil when none does.
	Method  string
	Command *Command
}

// Explain explains node's disruption at now with the loop's predicates: which NodeClaims are
// candidates for each reason (Cluster.Candidates), each method's ShouldDisrupt, the rollback
// back-off, the budgets (Cluster.Allowed), and each method's ComputeCommand over the node
// alone, in methods' order. Multi-node consolidation is skipped: a set of one is single-node
// consolidation's.
func Explain(ctx context.Context, cluster *Cluster, methods []Method, node string, now time.Time) (*NodeExplanation, error) {
	if cluster.Nodes[node] == nil {
		return nil, fmt.Errorf("node %s not found", node)
	}
	out := &NodeExplanation{}
	add := func(name string, ok bool, format string, args ...any) {
		out.Checks = append(out.Checks, NodeCheck{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
	}
	for _, nc := range cluster.NodeClaims {
		if n := cluster.NodeOf[nc.Name]; n != nil && n.Name == node {
			out.NodeClaim = nc
		}
	}
	nc := out.NodeClaim
	if nc == nil {
		add("managed", false, "no NodeClaim owns the node: joinery does not disrupt it")
		return out, nil
	}
	np := cluster.NodePoolOf(nc)
	if np == nil {
		add("nodepool", false, "standalone NodeClaim or its NodePool is gone: not disrupted voluntarily")
		return out, nil
	}
	out.NodePool = np
	add("initialized", isInitialized(nc), "NodeClaim condition Initialized")
	add("not deleting", !cluster.isDeleting(nc), "neither the NodeClaim nor the Node is being deleted or already chosen")
	if np.Spec.Replicas != nil {
		add("static nodepool", false, "a static NodePool keeps its count: only drift replaces its nodes")
	}

	reasons := []string{karpv1.DisruptionReasonDrifted, karpv1.DisruptionReasonEmpty, karpv1.DisruptionReasonUnderutilized}
	// Each reason's candidates as its method's class sees them (graceful when no method
	// has the reason).
	class := map[string]Class{}
	for _, m := range methods {
		class[m.Reason()] = m.Class()
	}
	cands := map[string]*Candidate{}
	for _, reason := range reasons {
		if class[reason] == "" {
			class[reason] = ClassGraceful
		}
		cs, blocked := cluster.Candidates(reason, class[reason])
		for _, b := range blocked {
			if b.NodeClaim.Name == nc.Name {
				add("pods and annotations ("+reason+")", false, "%s", strings.TrimPrefix(b.Message, "Cannot disrupt Node: "))
			}
		}
		for _, cand := range cs {
			if cand.Name() == nc.Name {
				cands[reason] = cand
			}
		}
	}
	if len(cands) == len(reasons) {
		add("pods and annotations", true, "no do-not-disrupt annotation, every PDB of its pods allows an eviction")
	}
	policy := np.Spec.Disruption.ConsolidationPolicy
	add("consolidationPolicy", consolidatesUnderused(np), "%s (underused nodes are consolidated with %s or %s)", policy,
		karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized, karpv1.ConsolidationPolicyBalanced)
	consolidatable := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeConsolidatable)
	add("consolidateAfter", !np.Spec.Disruption.ConsolidateAfter.IsNever() && consolidatable != nil && consolidatable.Status == metav1.ConditionTrue,
		"consolidateAfter %s; condition Consolidatable %s", np.Spec.Disruption.ConsolidateAfter.String(), condString(consolidatable))
	drifted := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDrifted)
	add("drifted", drifted != nil && drifted.Status == metav1.ConditionTrue, "condition Drifted %s", condString(drifted))
	backoff := backingOff(nc, now)
	if backoff != "" {
		add("back-off", false, "%s", strings.TrimPrefix(backoff, "Cannot disrupt Node: "))
	}
	for _, reason := range reasons {
		allowed, errs := cluster.Allowed(reason, now)
		detail := fmt.Sprintf("nodepool %s allows %d more disruption(s) for %s", np.Name, allowed[np.Name], reason)
		if err := errs[np.Name]; err != nil {
			detail += ": " + err.Error()
		}
		add("budget "+reason, allowed[np.Name] > 0, "%s", detail)
	}
	if backoff != "" {
		return out, nil // computeMethod passes a backing-off candidate over
	}

	for _, m := range methods {
		cand := cands[m.Reason()]
		if cand == nil || !m.ShouldDisrupt(cand) {
			continue
		}
		if m.ConsolidationType() == ConsolidationTypeMulti {
			continue
		}
		allowed, _ := cluster.Allowed(m.Reason(), now)
		cmd, blocked, err := m.ComputeCommand(ctx, cluster, allowed, []*Candidate{cand})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.Name(), err)
		}
		if cmd == nil {
			for _, b := range blocked {
				add("simulation "+m.Name(), false, "%s", strings.TrimPrefix(b.Message, "Cannot disrupt Node: "))
			}
			continue
		}
		var moves []string
		for _, p := range cand.Pods {
			moves = append(moves, fmt.Sprintf("%s/%s→%s", p.Namespace, p.Name, cmd.Destinations[p.UID]))
		}
		slices.Sort(moves)
		detail := fmt.Sprintf("%s: %s", cmd.Decision(), strings.Join(moves, ", "))
		if len(cmd.Replacements) > 0 {
			detail += fmt.Sprintf(" (%d replacement(s))", len(cmd.Replacements))
		}
		add("simulation "+m.Name(), true, "%s", detail)
		if out.Command == nil {
			out.Method, out.Command = m.Name(), cmd
		}
	}
	return out, nil
}

// condString is a condition's status and reason, or "absent".
func condString(cond *metav1.Condition) string {
	if cond == nil {
		return "absent"
	}
	return fmt.Sprintf("%s (%s)", cond.Status, cond.Reason)
}
