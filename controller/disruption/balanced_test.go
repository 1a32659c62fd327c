package disruption

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/controller/cost"
)

func balanced(np *karpv1.NodePool) {
	np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyBalanced
}

// almostFull is a cpu request that leaves 100m of the type's allocatable free.
func almostFull(its cloudprovider.InstanceTypes, name string) string {
	i := slices.IndexFunc(its, func(it *cloudprovider.InstanceType) bool { return it.Name == name })
	cpu := its[i].Allocatable()[corev1.ResourceCPU]
	cpu.Sub(resource.MustParse("100m"))
	return cpu.String()
}

// TestBalancedScore: the score of a move is (savings ÷ NodePool cost) ÷ (move disruption ÷
// NodePool disruption), each node's disruption being 1 plus its pods' costs; approved at 1/2.
func TestBalancedScore(t *testing.T) {
	its := testCatalog(t, 0)
	large := func(name, pool string) []client.Object {
		return pair(testNode(name, pool, typed(its, "large", "on-demand"))) // 0.4/h
	}
	pods := func(node string, n int) []client.Object {
		var out []client.Object
		for i := range n {
			out = append(out, cpuPod(fmt.Sprintf("%s-%d", node, i), "node-"+node, "100m"))
		}
		return out
	}
	tests := []struct {
		name        string
		objs        [][]client.Object
		move        []string
		replacement float64
		// want: NodePool → score (-1: no score for that NodePool)
		want     map[string]float64
		approved bool
	}{
		{
			// cost 1.2, disruption 5+2+2 = 9: delete a saves 0.4/1.2 for 5/9 → 0.6.
			name: "delete approved", objs: [][]client.Object{{testNodePool("p", balanced)}, large("a", "p"), pods("a", 4), large("b", "p"), pods("b", 1), large("c", "p"), pods("c", 1)},
			move: []string{"a"}, want: map[string]float64{"p": (0.4 / 1.2) / (5.0 / 9)}, approved: true,
		},
		{
			// the same node replaced by a 0.1/h type saves 0.3/1.2 for 5/9 → 0.45.
			name: "marginal replace rejected", objs: [][]client.Object{{testNodePool("p", balanced)}, large("a", "p"), pods("a", 4), large("b", "p"), pods("b", 1), large("c", "p"), pods("c", 1)},
			move: []string{"a"}, replacement: 0.1, want: map[string]float64{"p": (0.3 / 1.2) / (5.0 / 9)},
		},
		{
			// an empty node costs the baseline 1 of a total 1+3 = 4: 0.5 ÷ 1/4 → 2.
			name: "empty node", objs: [][]client.Object{{testNodePool("p", balanced)}, large("a", "p"), large("b", "p"), pods("b", 2)},
			move: []string{"a"}, want: map[string]float64{"p": 0.5 / (1.0 / 4)}, approved: true,
		},
		{
			name: "no savings scores 0", objs: [][]client.Object{{testNodePool("p", balanced)}, large("a", "p"), large("b", "p")},
			move: []string{"a"}, replacement: 0.4, want: map[string]float64{"p": 0},
		},
		{
			name: "WhenEmptyOrUnderutilized is not scored", objs: [][]client.Object{{testNodePool("p")}, large("a", "p"), pods("a", 4), large("b", "p")},
			move: []string{"a"}, replacement: 0.39, want: map[string]float64{}, approved: true,
		},
		{
			// a (Balanced, 0.4 of 0.8, 2 of 3) and b (WhenEmptyOrUnderutilized) replaced by
			// 0.4: p pays half the replacement, saving 0.2/0.8 for 2/3 → 0.375; q is not scored.
			name: "multi-node across NodePools: the Balanced one is scored with its share", objs: [][]client.Object{
				{testNodePool("p", balanced), testNodePool("q")}, large("a", "p"), pods("a", 1), large("a2", "p"), large("b", "q"), pods("b", 1)},
			move: []string{"a", "b"}, replacement: 0.4, want: map[string]float64{"p": (0.2 / 0.8) / (2.0 / 3)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cluster, _ := loadCluster(t, slices.Concat(tt.objs...)...)
			var cands []*Candidate
			all, _ := cluster.Candidates(karpv1.DisruptionReasonUnderutilized, ClassGraceful)
			for _, c := range all {
				if slices.Contains(tt.move, c.Name()) {
					cands = append(cands, c)
				}
			}
			scores, err := newPriceBook(benchTypes(its), cluster).score(context.Background(), cluster, cands, tt.replacement)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]float64{}
			approved := true
			for _, s := range scores {
				got[s.NodePool] = s.Score
				approved = approved && s.Approved()
			}
			if len(got) != len(tt.want) {
				t.Fatalf("scores %+v, want %v", scores, tt.want)
			}
			for np, want := range tt.want {
				if math.Abs(got[np]-want) > 1e-9 {
					t.Errorf("score of %s = %v, want %v", np, got[np], want)
				}
			}
			if approved != tt.approved {
				t.Errorf("approved = %v, want %v (%+v)", approved, tt.approved, scores)
			}
		})
	}
}

// TestBalancedConsolidation runs single-node consolidation with the real solver: under
// Balanced a delete that saves enough goes ahead with its score on the command, a marginal
// replace is refused with an Unconsolidatable reason and counted as rejected; the same
// replace under WhenEmptyOrUnderutilized goes ahead.
func TestBalancedConsolidation(t *testing.T) {
	its := testCatalog(t, 0)
	tests := []struct {
		name     string
		policy   npOption
		bFill    string // cpu of b's one pod
		decision string // "" refused
		why      string
	}{
		{name: "Balanced: the delete is approved", policy: balanced, bFill: "1", decision: "delete"},
		{name: "Balanced: the marginal replace is rejected", policy: balanced, bFill: almostFull(its, "large"),
			why: "Balanced consolidation: savings do not justify the disruption, score 0.45"},
		{name: "WhenEmptyOrUnderutilized: the replace goes ahead", policy: func(*karpv1.NodePool) {}, bFill: almostFull(its, "large"), decision: "replace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []client.Object{testNodePool("default", onDemandOnly, allBudget, tt.policy)}
			for _, n := range []string{"a", "b", "c"} {
				objs = append(objs, pair(testNode(n, "default", typed(its, "large", "on-demand")))...)
			}
			for i := range 4 {
				objs = append(objs, cpuPod(fmt.Sprintf("a-%d", i), "node-a", "250m"))
			}
			objs = append(objs, cpuPod("b-0", "node-b", tt.bFill), cpuPod("c-0", "node-c", almostFull(its, "large")))
			cluster, _ := loadCluster(t, objs...)
			m := &SingleNodeConsolidation{Consolidation{Simulator: newSolverSimulator(t, its), InstanceTypes: benchTypes(its)}}
			cands, _ := cluster.Candidates(m.Reason(), m.Class())
			i := slices.IndexFunc(cands, func(c *Candidate) bool { return c.Name() == "a" })
			rejected := testutil.ToFloat64(consolidationMoves.WithLabelValues(moveRejected, "default", string(karpv1.ConsolidationPolicyBalanced)))
			allowed, _ := cluster.Allowed(m.Reason(), epoch)
			cmd, blocked, err := m.ComputeCommand(context.Background(), cluster, allowed, cands[i:i+1])
			if err != nil {
				t.Fatal(err)
			}
			rejectedNow := testutil.ToFloat64(consolidationMoves.WithLabelValues(moveRejected, "default", string(karpv1.ConsolidationPolicyBalanced))) - rejected
			if tt.decision == "" {
				if cmd != nil {
					t.Fatalf("command %s, want none", cmd)
				}
				if len(blocked) != 1 || blocked[0].Reason != EventUnconsolidatable || !strings.HasPrefix(blocked[0].Message, tt.why) {
					t.Errorf("blocked %+v, want Unconsolidatable %q", blocked, tt.why)
				}
				if rejectedNow != 1 {
					t.Errorf("rejected moves counted %v, want 1", rejectedNow)
				}
				return
			}
			if cmd == nil {
				t.Fatalf("no command (blocked %+v), want %s", blocked, tt.decision)
			}
			if string(cmd.Decision()) != tt.decision {
				t.Errorf("decision %s, want %s", cmd.Decision(), tt.decision)
			}
			verifyCommand(t, cluster, cmd, its)
			if wantScored := tt.policy != nil && cmd.Candidates[0].NodePool.Spec.Disruption.ConsolidationPolicy == karpv1.ConsolidationPolicyBalanced; wantScored != (len(cmd.Scores) == 1) {
				t.Errorf("scores %+v, want one: %v", cmd.Scores, wantScored)
			}
			if rejectedNow != 0 {
				t.Errorf("rejected moves counted %v, want 0", rejectedNow)
			}
		})
	}
}

// TestBalancedPrefilter: a node whose deletion alone scores below 1/2 is refused without a
// simulation.
func TestBalancedPrefilter(t *testing.T) {
	its := testCatalog(t, 0)
	objs := []client.Object{testNodePool("default", onDemandOnly, allBudget, balanced)}
	objs = append(objs, pair(testNode("a", "default", typed(its, "small", "on-demand")))...)  // 0.1/h
	objs = append(objs, pair(testNode("b", "default", typed(its, "large", "on-demand")))...)  // 0.4/h
	objs = append(objs, pair(testNode("c", "default", typed(its, "medium", "on-demand")))...) // 0.2/h
	for i := range 8 {
		objs = append(objs, cpuPod(fmt.Sprintf("a-%d", i), "node-a", "100m"))
	}
	// a: saves 0.1/0.7 for 9/11 of the disruption → 0.17.
	cluster, _ := loadCluster(t, objs...)
	sim := &fakeSimulator{}
	m := &SingleNodeConsolidation{Consolidation{Simulator: sim, InstanceTypes: benchTypes(its)}}
	cands, _ := cluster.Candidates(m.Reason(), m.Class())
	i := slices.IndexFunc(cands, func(c *Candidate) bool { return c.Name() == "a" })
	allowed, _ := cluster.Allowed(m.Reason(), epoch)
	cmd, blocked, err := m.ComputeCommand(context.Background(), cluster, allowed, cands[i:i+1])
	if err != nil {
		t.Fatal(err)
	}
	if cmd != nil || sim.calls != 0 {
		t.Fatalf("command %v after %d simulations, want none and none", cmd, sim.calls)
	}
	if len(blocked) != 1 || !strings.Contains(blocked[0].Message, "score 0.17") {
		t.Errorf("blocked %+v, want the score 0.17", blocked)
	}
}

// TestConsolidationApprovedEvent: an executed Balanced command is an approved move with its
// score observed and a ConsolidationApproved event — on the NodeClaim for single-node, on the
// NodePool for multi-node; a WhenEmptyOrUnderutilized command is counted with no event.
func TestConsolidationApprovedEvent(t *testing.T) {
	tests := []struct {
		name   string
		policy karpv1.ConsolidationPolicy
		cands  []string
		scored bool
		on     string // the event's object kind, "" for none
	}{
		{name: "single-node Balanced", policy: karpv1.ConsolidationPolicyBalanced, cands: []string{"a"}, scored: true, on: "NodeClaim"},
		{name: "multi-node Balanced", policy: karpv1.ConsolidationPolicyBalanced, cands: []string{"a", "b"}, scored: true, on: "NodePool"},
		{name: "WhenEmptyOrUnderutilized", policy: karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized, cands: []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			np := testNodePool("pool-"+strings.ReplaceAll(strings.ToLower(tt.name), " ", "-"), func(np *karpv1.NodePool) {
				np.Spec.Disruption.ConsolidationPolicy = tt.policy
			})
			cmd := &Command{Method: "x", Reason: karpv1.DisruptionReasonUnderutilized}
			for _, name := range tt.cands {
				nc, node := testNode(name, np.Name)
				cmd.Candidates = append(cmd.Candidates, &Candidate{NodeClaim: nc, Node: node, NodePool: np})
			}
			if tt.scored {
				cmd.Scores = []MoveScore{{NodePool: np.Name, SavingsFraction: 0.25, DisruptionFraction: 0.1, Score: 2.5}}
			}
			rec := &kindRecorder{}
			moves := consolidationMoves.WithLabelValues(moveApproved, np.Name, string(tt.policy))
			before := testutil.ToFloat64(moves)
			recordApproved(newPublisher(rec, clocktesting.NewFakeClock(epoch).Now), cmd)
			if got := testutil.ToFloat64(moves) - before; got != 1 {
				t.Errorf("approved moves counted %v, want 1", got)
			}
			got := rec.events
			if tt.on == "" {
				if len(got) != 0 {
					t.Errorf("events %q, want none", got)
				}
				return
			}
			want := tt.on + " " + EventConsolidationApproved + " Balanced consolidation approved delete of "
			if len(got) != 1 || !strings.HasPrefix(got[0], want) || !strings.Contains(got[0], "score 2.50 (saves 25.0%") {
				t.Errorf("events %q, want one %q... with the score", got, want)
			}
		})
	}
}

// kindRecorder records events as "<kind of the object> <reason> <message>".
type kindRecorder struct{ events []string }

func (r *kindRecorder) Eventf(regarding, _ runtime.Object, _, reason, _, note string, args ...any) {
	kind := fmt.Sprintf("%T", regarding)
	kind = kind[strings.LastIndex(kind, ".")+1:]
	r.events = append(r.events, kind+" "+reason+" "+fmt.Sprintf(note, args...))
}

// TestBalancedNodePoolCostIsTheCostMetric: the NodePool cost a Balanced score divides by is
// the cost joinery_nodepool_cost_per_hour shows (cost.Compute): launching NodeClaims count at
// the offering they would launch with, deleting ones do not.
func TestBalancedNodePoolCostIsTheCostMetric(t *testing.T) {
	its := testCatalog(t, 0)
	launching := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "launching", Labels: map[string]string{karpv1.NodePoolLabelKey: "p"}},
		Spec: karpv1.NodeClaimSpec{Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
			{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"large"}},
			{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}},
		}},
	}
	objs := slices.Concat(
		[]client.Object{testNodePool("p", balanced), launching},
		pair(testNode("a", "p", typed(its, "large", "on-demand"))),
		pair(testNode("b", "p", typed(its, "large", "on-demand"))),
		pair(testNode("gone", "p", typed(its, "large", "on-demand"), deleting)),
	)
	cluster, _ := loadCluster(t, objs...)
	ctx := context.Background()
	totals, err := newPriceBook(benchTypes(its), cluster).poolTotals(ctx, cluster, cluster.NodePools["p"])
	if err != nil {
		t.Fatal(err)
	}
	state := cost.State{NodePools: []*karpv1.NodePool{cluster.NodePools["p"]}, NodeClaims: cluster.NodeClaims}
	for _, n := range cluster.Nodes {
		state.Nodes = append(state.Nodes, n)
	}
	lines, err := cost.Compute(ctx, cost.NewPricer(benchTypes(its), state.NodePools), state)
	if err != nil {
		t.Fatal(err)
	}
	metric := cost.PerNodePool(state.NodePools, lines)["p"]
	if want := 3 * 0.4; math.Abs(metric-want) > 1e-9 {
		t.Fatalf("cost metric = %v, want %v (two nodes and the launching NodeClaim)", metric, want)
	}
	if math.Abs(totals.cost-metric) > 1e-9 {
		t.Errorf("Balanced's NodePool cost = %v, cost metric = %v", totals.cost, metric)
	}
}
