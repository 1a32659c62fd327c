package disruption

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/internal/testpods"
	"github.com/joinery-dev/joinery/simulation"
)

// stepOn runs one pass, stepping clk past every validation delay it waits.
func stepOn(t *testing.T, ctrl *Controller, clk *clocktesting.FakeClock) bool {
	t.Helper()
	type result struct {
		started bool
		err     error
	}
	done := make(chan result, 1)
	go func() {
		started, err := ctrl.Step(context.Background())
		done <- result{started, err}
	}()
	deadline := time.After(time.Minute)
	for {
		select {
		case r := <-done:
			if r.err != nil {
				t.Fatal(r.err)
			}
			return r.started
		case <-deadline:
			t.Fatal("pass did not end within a minute")
		default:
			if clk.HasWaiters() {
				clk.Step(DefaultConsolidationValidationDelay)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// disrupting counts the NodeClaims chosen by a command or being deleted.
func disrupting(t *testing.T, c client.Client) int {
	t.Helper()
	var list karpv1.NodeClaimList
	if err := c.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, nc := range list.Items {
		if nc.DeletionTimestamp != nil || isMarked(&nc) {
			n++
		}
	}
	return n
}

// finishTermination removes the termination finalizer from every NodeClaim being deleted,
// as the termination controller does once a node is drained: they go.
func finishTermination(t *testing.T, c client.Client) {
	t.Helper()
	var list karpv1.NodeClaimList
	if err := c.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		nc := &list.Items[i]
		if nc.DeletionTimestamp == nil {
			continue
		}
		nc.Finalizers = nil
		if err := c.Update(context.Background(), nc); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
}

// candidateCommands are the distinct commands ConsolidationCandidate events named.
func candidateCommands(evs []string) []string {
	var out []string
	for _, e := range matching(evs, EventConsolidationCandidate) {
		i := strings.Index(e, "Consolidation candidate: ")
		if cmd := e[i:]; !slices.Contains(out, cmd) {
			out = append(out, cmd)
		}
	}
	return out
}

// TestPassChoosesIndependentCommandsTogether: twelve empty nodes. Under a 100 % budget one
// emptiness command takes all twelve. Under a budget of 3 nodes the first pass chooses all
// ceil(12/3) = 4 commands of 3 and waits one validation delay for them all; each runs as soon
// as the nodes of the one before are gone, never more than 3 disrupting at once. The loop
// used to choose one command per pass, each after its own delay.
func TestPassChoosesIndependentCommandsTogether(t *testing.T) {
	tests := []struct {
		name   string
		budget string
		sizes  []int
	}{
		{name: "100 %: one command", budget: "100%", sizes: []int{12}},
		{name: "3 nodes: four commands of three", budget: "3", sizes: []int{3, 3, 3, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []client.Object{testNodePool("default", budgets(karpv1.Budget{Nodes: tt.budget}))}
			for i := range 12 {
				objs = append(objs, pair(testNode(fmt.Sprintf("e%02d", i), "default", func(nc *karpv1.NodeClaim, _ *corev1.Node) {
					nc.Finalizers = []string{karpv1.TerminationFinalizer}
				}))...)
			}
			c := newClient(t, objs...)
			rec := events.NewFakeRecorder(1000)
			clk := clocktesting.NewFakeClock(epoch)
			ctrl := New(c, c, rec, clk, []Method{&Emptiness{}}, Options{})

			if !stepOn(t, ctrl, clk) {
				t.Fatal("the first pass started no command")
			}
			chosen := candidateCommands(drain(rec))
			if len(chosen) != len(tt.sizes) {
				t.Fatalf("the first pass chose %d commands, want %d: %q", len(chosen), len(tt.sizes), chosen)
			}
			var sizes []int
			seen := map[string]bool{}
			for pass := 0; pass < 10 && len(seen) < 12; pass++ {
				if n, limit := disrupting(t, c), budgetLimit(tt.budget); n > limit {
					t.Fatalf("pass %d: %d NodeClaims disrupting, budget %d", pass, n, limit)
				}
				var list karpv1.NodeClaimList
				if err := c.List(context.Background(), &list); err != nil {
					t.Fatal(err)
				}
				n := 0
				for _, nc := range list.Items {
					if nc.DeletionTimestamp != nil && !seen[nc.Name] {
						seen[nc.Name] = true
						n++
					}
				}
				if n > 0 {
					sizes = append(sizes, n)
				}
				finishTermination(t, c)
				stepOn(t, ctrl, clk)
			}
			if !slices.Equal(sizes, tt.sizes) {
				t.Errorf("commands removed %v nodes, want %v", sizes, tt.sizes)
			}
			if more := candidateCommands(drain(rec)); len(more) != 0 {
				t.Errorf("later passes chose %q, want every command chosen by the first", more)
			}
		})
	}
}

func budgetLimit(b string) int {
	if b == "100%" {
		return 12
	}
	var n int
	fmt.Sscan(b, &n)
	return n
}

// xyzCluster is three medium nodes: x and y with a pod of 2.5 CPU each, z with one of 0.5, so
// only one of x's and y's pods fits on z. It returns the cluster, a simulator over the test
// catalog, and the underutilization candidates by name.
func xyzCluster(t *testing.T) (*Cluster, *SolverSimulator, map[string]*Candidate) {
	t.Helper()
	its := testCatalog(t, 0)
	objs := []client.Object{testNodePool("default", onDemandOnly, allBudget)}
	for _, n := range []string{"x", "y", "z"} {
		objs = append(objs, pair(testNode(n, "default", typed(its, "medium", "on-demand")))...)
	}
	objs = append(objs, cpuPod("px", "node-x", "2500m"), cpuPod("py", "node-y", "2500m"), cpuPod("pz", "node-z", "500m"))
	cluster, _ := loadCluster(t, objs...)
	return cluster, newSolverSimulator(t, its), candidatesByName(cluster)
}

// candidatesByName returns cluster's underutilization candidates by name.
func candidatesByName(cluster *Cluster) map[string]*Candidate {
	cands, _ := cluster.Candidates(karpv1.DisruptionReasonUnderutilized, ClassGraceful)
	byName := map[string]*Candidate{}
	for _, cand := range cands {
		byName[cand.Name()] = cand
	}
	return byName
}

// TestReservedCandidatesPodsNeedRoom: a command the pass chose reserves its candidates; a
// later command of the pass is simulated with them gone and their pods pending, so it cannot
// count on the room the first one's pods take.
func TestReservedCandidatesPodsNeedRoom(t *testing.T) {
	cluster, sim, byName := xyzCluster(t)
	alone, err := sim.Simulate(context.Background(), cluster, []*Candidate{byName["y"]})
	if err != nil {
		t.Fatal(err)
	}
	if len(alone.Replacements) != 0 || alone.Refusal(cluster, []*Candidate{byName["y"]}) != nil {
		t.Fatalf("y alone: %d replacements, refusal %q; want py on z", len(alone.Replacements), alone.Refusal(cluster, []*Candidate{byName["y"]}))
	}
	cluster.reserve(&Command{Candidates: []*Candidate{byName["x"]}})
	after, err := sim.Simulate(context.Background(), cluster, []*Candidate{byName["y"]})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("y after x reserved: %d replacements, refusal %q", len(after.Replacements), after.Refusal(cluster, []*Candidate{byName["y"]}))
	if len(after.Replacements) == 0 && after.Refusal(cluster, []*Candidate{byName["y"]}) == nil {
		t.Errorf("y after x was reserved: deleted with py → %q, want a replacement or a refusal: x's pod takes z's room", after.Destinations["pod-py"])
	}
	if again, _ := cluster.Candidates(karpv1.DisruptionReasonUnderutilized, ClassGraceful); slices.ContainsFunc(again, func(c *Candidate) bool { return c.Name() == "x" }) {
		t.Error("a reserved candidate is a candidate again")
	}
	if alloc, _ := cluster.Allowed(karpv1.DisruptionReasonUnderutilized, epoch); alloc["default"] != 3 {
		t.Errorf("allowed %d with one reserved, want 3: budgets count commands when they run", alloc["default"])
	}
}

// countingMethod counts how often the loop asks it for a command.
type countingMethod struct {
	contractOnly
	asked *int
}

func (c countingMethod) ComputeCommand(ctx context.Context, cl *Cluster, allowed map[string]int, cands []*Candidate) (*Command, []Blocked, error) {
	*c.asked++
	return c.contractOnly.ComputeCommand(ctx, cl, allowed, cands)
}

// TestPassDecidesWhileNodesBeingDeletedHoldTheBudget: empty nodes whose budget (1) is held
// only by a node being deleted. The first pass decides at once, with the budget the NodePool
// has once that node is gone, and waits its validation delay while the node goes; the command
// starts as soon as the budget frees — the node gone, or its instance terminating (it counts
// no more, as in Karpenter) — with no second validation delay, and the methods are not asked
// again meanwhile; so do the next two, each as the one before is gone. Every pass of the
// sequence keeps the budget: never two nodes disrupting.
// The loop used to decide only once the node was gone, and then wait the delay.
func TestPassDecidesWhileNodesBeingDeletedHoldTheBudget(t *testing.T) {
	terminating := func(t *testing.T, c client.Client) {
		var nc karpv1.NodeClaim
		if err := c.Get(context.Background(), keyOf("going"), &nc); err != nil {
			t.Fatal(err)
		}
		instanceTerminatingClaim(&nc, nil)
		if err := c.Status().Update(context.Background(), &nc); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		free func(*testing.T, client.Client)
	}{
		{name: "the node gone", free: finishTermination},
		{name: "its instance terminating", free: terminating},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []client.Object{testNodePool("default", budgets(karpv1.Budget{Nodes: "1"}))}
			objs = append(objs, pair(testNode("going", "default", deleting))...)
			for _, name := range []string{"e1", "e2", "e3"} {
				objs = append(objs, pair(testNode(name, "default", func(nc *karpv1.NodeClaim, _ *corev1.Node) {
					nc.Finalizers = []string{karpv1.TerminationFinalizer}
				}))...)
			}
			c := newClient(t, objs...)
			clk := clocktesting.NewFakeClock(epoch)
			asked := 0
			ctrl := New(c, c, events.NewFakeRecorder(100), clk, []Method{countingMethod{contractOnly{&Emptiness{}}, &asked}}, Options{})
			budgetKept := func(when string) {
				t.Helper()
				cluster, err := LoadCluster(context.Background(), c)
				if err != nil {
					t.Fatal(err)
				}
				if n := cluster.Counts()["default"].Deleting; n > 1 {
					t.Fatalf("%s: %d nodes count against a budget of 1", when, n)
				}
			}

			// The three are independent commands of one node each (the budget's size), all
			// chosen by the first pass (chooseCommands).
			if stepOn(t, ctrl, clk) || asked == 0 || len(ctrl.waiting) != 3 {
				t.Fatalf("first pass: asked %d, %d commands waiting; want the three commands waiting for the budget, none started", asked, len(ctrl.waiting))
			}
			budgetKept("first pass")
			firstAsked := asked
			clk.Step(time.Second)
			if stepOn(t, ctrl, clk) || asked != firstAsked || len(ctrl.waiting) != 3 || !ctrl.soon {
				t.Fatalf("node still being deleted: asked %d (was %d), %d waiting, soon %t; want the commands still waiting, a pass soon", asked, firstAsked, len(ctrl.waiting), ctrl.soon)
			}
			budgetKept("second pass")
			tt.free(t, c)
			before := clk.Now()
			if !stepOn(t, ctrl, clk) {
				t.Fatal("budget freed: no command started")
			}
			if waited := clk.Since(before); waited >= DefaultConsolidationValidationDelay {
				t.Errorf("the command waited %s more once the budget freed, want no second validation delay", waited)
			}
			budgetKept("after the start")
			for pass := 0; pass < 10 && disrupting(t, c) > 0; pass++ {
				finishTermination(t, c)
				before := clk.Now()
				stepOn(t, ctrl, clk)
				budgetKept(fmt.Sprintf("pass %d of the sequence", pass))
				if waited := clk.Since(before); waited >= DefaultConsolidationValidationDelay {
					t.Errorf("pass %d of the sequence waited %s, want the next command started as the budget frees", pass, waited)
				}
			}
			var left karpv1.NodeClaimList
			if err := c.List(context.Background(), &left); err != nil {
				t.Fatal(err)
			}
			if n := len(left.Items); n != 0 {
				t.Errorf("%d NodeClaims left, want every empty node removed, one at a time", n)
			}
		})
	}
}

// TestDryRunChoosesAsThePassDoes: the dry run (`joinery simulate`) reports every command the
// pass would choose — four of three for twelve empty nodes under a budget of 3 — and leaves
// the cluster as it found it.
func TestDryRunChoosesAsThePassDoes(t *testing.T) {
	objs := []client.Object{testNodePool("default", budgets(karpv1.Budget{Nodes: "3"}))}
	for i := range 12 {
		objs = append(objs, pair(testNode(fmt.Sprintf("e%02d", i), "default"))...)
	}
	cluster, _ := loadCluster(t, objs...)
	pass, err := DryRun(context.Background(), cluster, GracefulMethods(Consolidation{}), epoch)
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for _, cmd := range pass.Commands {
		sizes = append(sizes, len(cmd.Candidates))
	}
	if !slices.Equal(sizes, []int{3, 3, 3, 3}) || pass.Command != pass.Commands[0] {
		t.Errorf("commands of %v nodes (first %v), want four of three", sizes, pass.Command)
	}
	if cands, _ := cluster.Candidates(karpv1.DisruptionReasonEmpty, ClassGraceful); len(cands) != 12 {
		t.Errorf("%d candidates after the dry run, want the 12 again", len(cands))
	}
}

// TestPassChoosesReplacingCommandsTogether: four large nodes, each with one small pod that
// keeps a node to itself, so each can only be replaced by a smaller node. Under a budget of
// one node the pass chooses the four replacements at once, as it does commands that only
// delete: each later one simulated with the earlier ones started (their nodes keep their pods
// and take no new one), so the four validation delays are one. The pass used to end its
// choice at the first command that launches, so four replacements took four delays.
func TestPassChoosesReplacingCommandsTogether(t *testing.T) {
	its := testCatalog(t, 0)
	objs := []client.Object{testNodePool("default", onDemandOnly, budgets(karpv1.Budget{Nodes: "1"}))}
	names := []string{"a", "b", "c", "d"}
	for _, n := range names {
		objs = append(objs, pair(testNode(n, "default", typed(its, "large", "on-demand")))...)
		// Each pod keeps a node to itself: it can only leave its node for a new one.
		objs = append(objs, testPod("p"+n, "node-"+n, labelled("app", "solo"), podOption(testpods.AntiAffine(corev1.LabelHostname, "solo"))))
	}
	cluster, _ := loadCluster(t, objs...)
	pass, _, got := consolidationDryRun(t, cluster, its)
	if len(pass.Commands) != len(names) {
		t.Fatalf("the pass chose %d commands, want one replacement per node: %q", len(pass.Commands), got)
	}
	seen := map[string]bool{}
	for _, cmd := range pass.Commands {
		if len(cmd.Candidates) != 1 || len(cmd.Replacements) != 1 {
			t.Fatalf("command %s: %d candidates, %d replacements; want one large node replaced by one smaller", cmd, len(cmd.Candidates), len(cmd.Replacements))
		}
		name := cmd.Candidates[0].Name()
		if seen[name] {
			t.Fatalf("%s is the candidate of two commands: %q", name, got)
		}
		seen[name] = true
		if types := cmd.Replacements[0].Spec.Requirements; slices.ContainsFunc(types, func(r karpv1.NodeSelectorRequirementWithMinValues) bool {
			return r.Key == corev1.LabelInstanceTypeStable && slices.Contains(r.Values, "large")
		}) {
			t.Errorf("command %s may launch another large node", cmd)
		}
	}
	if cands, _ := cluster.Candidates(karpv1.DisruptionReasonUnderutilized, ClassGraceful); len(cands) != len(names) {
		t.Errorf("%d candidates after the dry run, want the %d again", len(cands), len(names))
	}
}

// TestLaunchingCommandsAreSimulatedDone (issue 24): once the pass chose a command that
// launches, a later command is simulated on the cluster as it will be once that command is
// done: its candidate gone, its pod on its replacement — a launching NodeClaim with the pod
// planned onto it — whose room is left for others. b's pod fits beside a's pod on a's
// replacement, so b's command launches nothing. Before, a's nodes were closed (they kept
// their pods and took none), and b needed a replacement of its own; in the live scale-down
// a zone's surplus pods, which must go to the zones below it, had nowhere to go, and each
// zone's command waited for a pass of its own, a validation delay apiece.
func TestLaunchingCommandsAreSimulatedDone(t *testing.T) {
	its := testCatalog(t, 0)
	np := testNodePool("default", onDemandOnly, allBudget)
	objs := []client.Object{np}
	for _, n := range []string{"a", "b"} {
		objs = append(objs, pair(testNode(n, "default", typed(its, "large", "on-demand")))...)
	}
	objs = append(objs, cpuPod("pa", "node-a", "1500m"), cpuPod("pb", "node-b", "1000m"))
	cluster, _ := loadCluster(t, objs...)
	sim := newSolverSimulator(t, its)
	byName := candidatesByName(cluster)
	b := []*Candidate{byName["b"]}
	alone, err := sim.Simulate(context.Background(), cluster, b)
	if err != nil {
		t.Fatal(err)
	}
	if alone.Destinations["pod-pb"] != "node-a" && alone.Destinations["pod-pb"] != "a" {
		t.Fatalf("b alone: pb → %q, want node a (the test's premise)", alone.Destinations["pod-pb"])
	}

	medium := np.Spec.Template.Spec.Requirements
	medium = append(slices.Clone(medium), karpv1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"medium"}})
	cluster.reserve(&Command{
		Candidates: []*Candidate{byName["a"]},
		Replacements: []*karpv1.NodeClaim{{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "default-", Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}},
			Spec:       karpv1.NodeClaimSpec{NodeClassRef: np.Spec.Template.Spec.NodeClassRef, Requirements: medium},
		}},
		Destinations: map[types.UID]string{"pod-pa": "replacement-0"},
	})
	view, batch := newView(cluster, b, nil)
	for _, n := range view.nodes {
		if n.Name == "node-a" {
			t.Error("a's node is in the view: its command is done")
		}
	}
	if !slices.ContainsFunc(view.nodeClaims, func(nc *karpv1.NodeClaim) bool {
		return nc.Name == "a-replacement-0" && slices.Equal(simulation.PlannedPods(nc), []types.UID{"pod-pa"})
	}) {
		t.Error("the view has no launching a-replacement-0 with pa planned onto it")
	}
	if got := podNames(batch); !slices.Equal(got, []string{"pb"}) {
		t.Errorf("batch %v, want only b's pod (pa is placed, not planned)", got)
	}
	after, err := sim.Simulate(context.Background(), cluster, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Replacements) != 0 || after.Destinations["pod-pb"] != "a-replacement-0" || after.Refusal(cluster, b) != nil {
		t.Errorf("b after a's command: %d replacements, pb → %q, refusal %v; want pb on a's replacement", len(after.Replacements), after.Destinations["pod-pb"], after.Refusal(cluster, b))
	}
	again, _ := cluster.Candidates(karpv1.DisruptionReasonUnderutilized, ClassGraceful)
	if names := names(again); slices.Contains(names, "a") {
		t.Errorf("a is a candidate again while its command is chosen: %v", names)
	}
	cluster.unreserve()
	if again, _ := cluster.Candidates(karpv1.DisruptionReasonUnderutilized, ClassGraceful); len(again) != 2 {
		t.Errorf("%d candidates once the pass's reservations are lifted, want 2", len(again))
	}
}

func podNames(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}

// TestCommandDroppedAfterItsBudgetWaitIsNoFailedValidation: commands whose budget stays held
// (a node being deleted that does not go) wait up to maxBudgetWait after their delay and are
// then dropped, to be chosen again by a later pass. They were still valid: no failed
// validation is counted and no ConsolidationRejected event says they were refused.
func TestCommandDroppedAfterItsBudgetWaitIsNoFailedValidation(t *testing.T) {
	objs := []client.Object{testNodePool("default", budgets(karpv1.Budget{Nodes: "1"}))}
	objs = append(objs, pair(testNode("going", "default", deleting))...)
	for _, name := range []string{"e1", "e2"} {
		objs = append(objs, pair(testNode(name, "default"))...)
	}
	c := newClient(t, objs...)
	rec := events.NewFakeRecorder(100)
	clk := clocktesting.NewFakeClock(epoch)
	ctrl := New(c, c, rec, clk, []Method{&Emptiness{}}, Options{})
	failed := func() float64 { return testutil.ToFloat64(failedValidations.WithLabelValues(ConsolidationTypeEmpty)) }
	before := failed()

	if stepOn(t, ctrl, clk) || len(ctrl.waiting) != 2 {
		t.Fatalf("first pass: %d commands waiting, want both empty nodes' commands waiting for the budget", len(ctrl.waiting))
	}
	drain(rec)
	clk.Step(maxBudgetWait)
	if stepOn(t, ctrl, clk) {
		t.Fatal("a command started while the budget was held")
	}
	if len(ctrl.waiting) != 0 {
		t.Fatalf("%d commands still waiting %s after their delay, want them dropped", len(ctrl.waiting), maxBudgetWait)
	}
	if n := failed() - before; n != 0 {
		t.Errorf("%v failed validations counted for commands dropped while waiting for their budget, want 0", n)
	}
	if evs := matching(drain(rec), EventConsolidationRejected); len(evs) != 0 {
		t.Errorf("events say the commands were rejected: %q", evs)
	}
	if stepOn(t, ctrl, clk); len(ctrl.waiting) != 2 {
		t.Errorf("the next pass has %d commands waiting, want both chosen again", len(ctrl.waiting))
	}
}

// TestRefusalNamesWhyTheNodeIsNoLongerACandidate: a command refused at validation because its
// node stopped being a candidate says which rule changed (the ConsolidationRejected event and
// the log carry it). The live scale-down's refusals said only "no longer a candidate"; the
// cause (pods bound to the node restarting its consolidateAfter) took a trace to find.
func TestRefusalNamesWhyTheNodeIsNoLongerACandidate(t *testing.T) {
	np := testNodePool("default")
	tests := []struct {
		name   string
		change func(nc *karpv1.NodeClaim, node *corev1.Node)
		want   string
	}{
		{"a pod was bound to it", func(nc *karpv1.NodeClaim, _ *corev1.Node) {
			meta.RemoveStatusCondition(&nc.Status.Conditions, karpv1.ConditionTypeConsolidatable)
		}, "it is not Consolidatable"},
		{"its node was annotated", func(_ *karpv1.NodeClaim, node *corev1.Node) {
			node.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
		}, "node is annotated with " + karpv1.DoNotDisruptAnnotationKey},
		{"it is being deleted", func(nc *karpv1.NodeClaim, node *corev1.Node) { deleting(nc, node) }, "it is gone, not initialized, being deleted or set aside"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nc, node := testNode("a", "default")
			chosen := &Command{Candidates: []*Candidate{{NodeClaim: nc.DeepCopy(), Node: node.DeepCopy(), NodePool: np, Pods: []*corev1.Pod{testPod("p", node.Name)}}}}
			tc.change(nc, node)
			cluster, c := loadCluster(t, np, nc, node, testPod("p", node.Name))
			ctrl := New(c, c, events.NewFakeRecorder(10), nil, nil, Options{})
			_, err := ctrl.validate(context.Background(), cluster, &SingleNodeConsolidation{}, chosen)
			refusal := refusalOf(err)
			if refusal == nil || !strings.Contains(refusal.Message, "a is no longer a single-node-consolidation candidate: "+tc.want) {
				t.Errorf("refusal %v, want it to say %q", err, tc.want)
			}
		})
	}
}

// TestNodesPodsAreMovingToAreNoCandidates (issue 24): the existing nodes a started command's
// pods were simulated onto are no candidates for arrivalWindow: the evicted pods' successors
// land there in moments and restart the node's consolidateAfter, so a command chosen for it
// meanwhile would only be refused at its validation. Destinations name a node or its
// NodeClaim; a replacement's pods disturb no existing node.
func TestNodesPodsAreMovingToAreNoCandidates(t *testing.T) {
	tests := []struct {
		dest string
		want []string // candidates right after the start
	}{
		{dest: "node-b", want: []string{"a"}},
		{dest: "b", want: []string{"a"}},
		{dest: "replacement-0", want: []string{"a", "b"}},
	}
	for _, tc := range tests {
		t.Run(tc.dest, func(t *testing.T) {
			objs := []client.Object{testNodePool("default")}
			for _, n := range []string{"a", "b"} {
				objs = append(objs, pair(testNode(n, "default"))...)
				objs = append(objs, testPod("p"+n, "node-"+n))
			}
			c := newClient(t, objs...)
			clk := clocktesting.NewFakeClock(epoch)
			ctrl := New(c, c, events.NewFakeRecorder(10), clk, nil, Options{})
			candidates := func() []string {
				t.Helper()
				cluster, err := ctrl.load(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				cands, _ := cluster.Candidates(karpv1.DisruptionReasonUnderutilized, ClassGraceful)
				got := names(cands)
				slices.Sort(got)
				return got
			}
			cluster, err := ctrl.load(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			ctrl.recordArrivals(cluster, &Command{Destinations: map[types.UID]string{"pod-moved": tc.dest}})
			if got := candidates(); !slices.Equal(got, tc.want) {
				t.Errorf("candidates while the pods arrive %v, want %v", got, tc.want)
			}
			clk.Step(arrivalWindow)
			if got := candidates(); !slices.Equal(got, []string{"a", "b"}) {
				t.Errorf("candidates after %s %v, want both again", arrivalWindow, got)
			}
		})
	}
}
