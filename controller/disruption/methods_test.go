package disruption

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

func TestEmptiness(t *testing.T) {
	np := testNodePool("default", budgets(karpv1.Budget{Nodes: "2"}))
	never := testNodePool("never")
	never.Spec.Disruption.ConsolidateAfter = karpv1.NeverDuration()
	objs := []client.Object{np, never}
	for _, n := range []string{"a", "b", "c", "d"} {
		objs = append(objs, pair(testNode(n, "default"))...)
	}
	objs = append(objs, pair(testNode("busy", "default"))...)
	objs = append(objs, testPod("web", "node-busy"), testPod("ds", "node-a", daemon))
	objs = append(objs, pair(testNode("waiting", "default", func(nc *karpv1.NodeClaim, _ *corev1.Node) { nc.Status.Conditions = nc.Status.Conditions[:1] }))...)
	objs = append(objs, pair(testNode("off", "never"))...)
	cluster, _ := loadCluster(t, objs...)

	m := &Emptiness{}
	cands, _ := cluster.Candidates(m.Reason(), m.Class())
	var mine []*Candidate
	for _, c := range cands {
		if m.ShouldDisrupt(c) {
			mine = append(mine, c)
		}
	}
	if got := names(mine); strings.Join(got, ",") != "a,b,c,d" {
		t.Fatalf("empty candidates = %v, want a,b,c,d (busy has a pod, waiting is not consolidatable, off has consolidateAfter Never)", got)
	}
	allowed, errs := cluster.Allowed(m.Reason(), epoch)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	cmd, blocked, err := m.ComputeCommand(context.Background(), cluster, allowed, mine)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cmd.CandidateNames(), ","); got != "a,b" {
		t.Errorf("command candidates = %s, want a,b (budget nodes: 2)", got)
	}
	if cmd.Decision() != DecisionDelete || len(cmd.Replacements) != 0 {
		t.Errorf("decision = %s with %d replacements, want delete", cmd.Decision(), len(cmd.Replacements))
	}
	if len(blocked) != 2 || !strings.Contains(blocked[0].Message, "no allowed disruptions for reason Empty in nodepool default") {
		t.Errorf("blocked = %+v, want c and d blocked by the budget", blocked)
	}
}

func TestDrift(t *testing.T) {
	tests := []struct {
		name          string
		budget        string
		unschedulable map[string]string
		want          string // candidate of the command, "" for none
		blocked       string
	}{
		{name: "oldest drift first, one per command", budget: "10%", want: "a"},
		{name: "refused when a pod fits nowhere, next candidate tried", budget: "10%", unschedulable: map[string]string{"web-a": "no NodePool fits: too big"}, want: "b",
			blocked: "Cannot disrupt Node: pod default/web-a would not schedule: no NodePool fits: too big"},
		{name: "budget exhausted", budget: "0", blocked: "Cannot disrupt Node: no allowed disruptions for reason Drifted in nodepool default (disruption budget)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ncA, nodeA := testNode("a", "default", drifted)
			ncB, nodeB := testNode("b", "default", drifted)
			ncB.Status.Conditions[2].LastTransitionTime.Time = epoch.Add(1)
			cluster, _ := loadCluster(t, testNodePool("default", budgets(karpv1.Budget{Nodes: tt.budget})), ncA, nodeA, ncB, nodeB,
				testPod("web-a", "node-a"), testPod("web-b", "node-b"))
			sim := &fakeSimulator{unschedulable: tt.unschedulable}
			m := &Drift{Simulator: sim}
			cands, _ := cluster.Candidates(m.Reason(), m.Class())
			allowed, _ := cluster.Allowed(m.Reason(), epoch)
			cmd, blocked, err := m.ComputeCommand(context.Background(), cluster, allowed, cands)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if cmd != nil {
				got = strings.Join(cmd.CandidateNames(), ",")
				if cmd.Decision() != DecisionReplace || len(cmd.Replacements) != 1 {
					t.Errorf("decision %s with %d replacements, want replace with 1", cmd.Decision(), len(cmd.Replacements))
				}
			}
			if got != tt.want {
				t.Errorf("command = %q, want %q", got, tt.want)
			}
			if tt.blocked != "" && (len(blocked) == 0 || blocked[0].Message != tt.blocked) {
				t.Errorf("blocked = %+v, want first %q", blocked, tt.blocked)
			}
		})
	}
}

func names(cands []*Candidate) []string {
	out := make([]string, len(cands))
	for i, c := range cands {
		out[i] = c.Name()
	}
	return out
}

// TestValidationDelayPerMethod: consolidation commands (emptiness here) are validated after
// the consolidation delay, other methods' (drift) after the loop's.
func TestValidationDelayPerMethod(t *testing.T) {
	tests := []struct {
		name   string
		method Method
		opts   []ncOption
		delay  time.Duration
	}{
		{name: "emptiness waits the consolidation delay", method: &Emptiness{}, delay: 15 * time.Second},
		{name: "drift waits the loop's delay", method: &Drift{Simulator: &fakeSimulator{}}, opts: []ncOption{drifted}, delay: 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, objects(testNodePool("default"), pair(testNode("a", "default", tt.opts...)))...)
			clk := clocktesting.NewFakeClock(epoch)
			ctrl := New(c, c, events.NewFakeRecorder(10), clk, []Method{tt.method}, Options{ValidationDelay: 5 * time.Second, ConsolidationValidationDelay: 15 * time.Second})
			if !stepAcrossDelay(t, ctrl, clk, tt.delay) {
				t.Error("command dropped at validation, want it executed")
			}
		})
	}
}

// stepAsync runs one pass of ctrl in the background; the channel gets whether it started a
// command.
func stepAsync(t *testing.T, ctrl *Controller) <-chan bool {
	done := make(chan bool, 1)
	go func() {
		started, err := ctrl.Step(context.Background())
		if err != nil {
			t.Error(err)
		}
		done <- started
	}()
	return done
}

// stepAcrossDelay runs one Step of ctrl and moves clk across delay, failing the test when the
// step validates before the delay is up or not within a minute after; it returns whether the
// step started a command.
func stepAcrossDelay(t *testing.T, ctrl *Controller, clk *clocktesting.FakeClock, delay time.Duration) bool {
	t.Helper()
	done := stepAsync(t, ctrl)
	waitFor(t, clk.HasWaiters)
	clk.Step(delay - time.Millisecond)
	if !clk.HasWaiters() {
		t.Fatalf("validated before %v", delay)
	}
	clk.Step(time.Millisecond)
	select {
	case started := <-done:
		return started
	case <-time.After(time.Minute):
		t.Fatalf("not validated %v after the command", delay)
		return false
	}
}

// waitFor polls cond until it holds (bounded generously).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 30s")
		}
		runtime.Gosched()
	}
}
