package disruption

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/internal/testcatalog"
	"github.com/joinery-dev/joinery/simulation/solver"
)

// decide runs m over c as the loop does: its candidates, its budget.
func decide(ctx context.Context, tb testing.TB, c *Cluster, m Method) *Command {
	tb.Helper()
	cmd, _ := decideAt(ctx, tb, c, m, epoch)
	return cmd
}

// decideAt is decide with the budget read at now; it also returns m's candidates.
func decideAt(ctx context.Context, tb testing.TB, c *Cluster, m Method, now time.Time) (*Command, []*Candidate) {
	tb.Helper()
	cands, _ := c.Candidates(m.Reason(), m.Class())
	var mine []*Candidate
	for _, cand := range cands {
		if m.ShouldDisrupt(cand) {
			mine = append(mine, cand)
		}
	}
	allowed, _ := c.Allowed(m.Reason(), now)
	cmd, _, err := m.ComputeCommand(ctx, c, allowed, mine)
	if err != nil {
		tb.Fatal(err)
	}
	return cmd, mine
}

// applyCommand is the cluster after cmd has run: the candidates' NodeClaims and Nodes gone,
// each replacement a NodeClaim with the Node its cheapest type makes (named prefix-N), each
// moved pod bound to its destination.
func applyCommand(tb testing.TB, c *Cluster, cmd *Command, its cloudprovider.InstanceTypes, prefix string) *Cluster {
	tb.Helper()
	out := &Cluster{NodePools: c.NodePools, Nodes: map[string]*corev1.Node{}, PodsByNode: map[string][]*corev1.Pod{},
		NodeOf: map[string]*corev1.Node{}, PDBs: c.PDBs, DaemonSets: c.DaemonSets}
	gone := map[string]bool{}
	for _, cand := range cmd.Candidates {
		gone[cand.NodeClaim.Name], gone[cand.Node.Name] = true, true
	}
	for _, nc := range c.NodeClaims {
		if !gone[nc.Name] {
			out.NodeClaims = append(out.NodeClaims, nc)
		}
	}
	for name, n := range c.Nodes {
		if !gone[name] {
			out.Nodes[name] = n
		}
	}
	replacements := map[string]string{} // "replacement-N" → node name
	for i, r := range cmd.Replacements {
		name := fmt.Sprintf("%s-%d", prefix, i)
		node, err := solver.ConcreteNode(r, name, its)
		if err != nil {
			tb.Fatal(err)
		}
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		nc := r.DeepCopy()
		nc.Name, nc.UID = name, types.UID("nc-"+name)
		nc.Labels = map[string]string{}
		for _, k := range []string{karpv1.NodePoolLabelKey, corev1.LabelInstanceTypeStable, karpv1.CapacityTypeLabelKey, corev1.LabelTopologyZone} {
			nc.Labels[k] = node.Labels[k]
		}
		nc.Status = karpv1.NodeClaimStatus{NodeName: name, Allocatable: node.Status.Allocatable, Conditions: []metav1.Condition{
			{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.NewTime(epoch)},
			{Type: karpv1.ConditionTypeConsolidatable, Status: metav1.ConditionTrue, Reason: "Consolidatable", LastTransitionTime: metav1.NewTime(epoch)},
		}}
		out.NodeClaims = append(out.NodeClaims, nc)
		out.Nodes[name] = node
		replacements[fmt.Sprintf("replacement-%d", i)] = name
	}
	for _, p := range c.Pods {
		if p.Spec.NodeName == "" || !gone[p.Spec.NodeName] {
			out.Pods = append(out.Pods, p)
			continue
		}
		dest, ok := cmd.Destinations[p.UID]
		if !ok {
			continue // a DaemonSet or finished pod goes with its node
		}
		node := replacements[dest]
		if node == "" {
			node = dest
			if n := c.NodeOf[dest]; n != nil {
				node = n.Name
			}
		}
		moved := p.DeepCopy()
		moved.Spec.NodeName = node
		out.Pods = append(out.Pods, moved)
	}
	for _, p := range out.Pods {
		if p.Spec.NodeName != "" {
			out.PodsByNode[p.Spec.NodeName] = append(out.PodsByNode[p.Spec.NodeName], p)
		}
	}
	out.link()
	return out
}

// clusterCost is what the cluster's nodes cost per hour.
func clusterCost(ctx context.Context, tb testing.TB, c *Cluster, its cloudprovider.InstanceTypes) float64 {
	tb.Helper()
	prices := newPriceBook(benchTypes(its), c)
	total := 0.0
	for _, nc := range c.NodeClaims {
		node := c.NodeOf[nc.Name]
		if node == nil {
			continue
		}
		p, err := prices.nodePrice(ctx, &Candidate{NodeClaim: nc, Node: node, NodePool: c.NodePoolOf(nc)})
		if err != nil || math.IsInf(p, 1) {
			tb.Fatalf("pricing %s: %v %v", nc.Name, p, err)
		}
		total += p
	}
	return total
}

// converge runs the methods as the loop does — the first method with a command wins, then
// again from the first — applying each command (checked by the fidelity check) until none is
// left or after maxRounds; it returns the final cluster and the commands applied.
func converge(ctx context.Context, tb testing.TB, c *Cluster, its cloudprovider.InstanceTypes, methods []Method, maxRounds int) (*Cluster, int) {
	tb.Helper()
	for round := range maxRounds {
		var cmd *Command
		for _, m := range methods {
			if cmd = decide(ctx, tb, c, m); cmd != nil {
				break
			}
		}
		if cmd == nil {
			return c, round
		}
		verifyCommand(tb, c, cmd, its)
		c = applyCommand(tb, c, cmd, its, fmt.Sprintf("round%d", round))
	}
	return c, maxRounds
}

// TestConsolidationNoCostlierThanOneAtATime: consolidating to the end with multi-node then
// single-node consolidation leaves the benchmark's cluster no costlier than deleting or
// replacing one node at a time (single-node consolidation alone) does; both save.
func TestConsolidationNoCostlierThanOneAtATime(t *testing.T) {
	ctx := context.Background()
	its := testcatalog.Bench()
	start := consolidationClusterGrouped(30, 10, its)
	before := clusterCost(ctx, t, start, its)
	base := Consolidation{Simulator: newSolverSimulator(t, its), InstanceTypes: benchTypes(its)}
	multi, single := &MultiNodeConsolidation{Consolidation: base}, &SingleNodeConsolidation{Consolidation: base}
	both, bothRounds := converge(ctx, t, start, its, []Method{multi, single}, 100)
	oneByOne, oneRounds := converge(ctx, t, start, its, []Method{single}, 100)
	costBoth, costOne := clusterCost(ctx, t, both, its), clusterCost(ctx, t, oneByOne, its)
	t.Logf("cost/h: before %.1f, multi+single %.1f (%d commands, %d nodes), one at a time %.1f (%d commands, %d nodes)",
		before, costBoth, bothRounds, len(both.NodeClaims), costOne, oneRounds, len(oneByOne.NodeClaims))
	if bothRounds == 100 || oneRounds == 100 {
		t.Fatalf("consolidation did not settle in 100 commands (%d, %d)", bothRounds, oneRounds)
	}
	if costBoth >= before || costOne >= before {
		t.Errorf("nothing saved: before %.2f, multi+single %.2f, one at a time %.2f", before, costBoth, costOne)
	}
	if costBoth > costOne+1e-9 {
		t.Errorf("multi+single consolidation ends at %.2f/h, costlier than one node at a time (%.2f/h)", costBoth, costOne)
	}
	// Every pod still has a node that exists.
	for _, p := range both.Pods {
		if p.Spec.NodeName != "" && both.Nodes[p.Spec.NodeName] == nil && !strings.HasPrefix(p.Name, "ds-") {
			t.Errorf("pod %s bound to %s, which is gone", p.Name, p.Spec.NodeName)
		}
	}
}
