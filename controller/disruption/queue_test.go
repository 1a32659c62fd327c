package disruption

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

const (
	testTimeout = 10 * time.Minute
	testPoll    = 2 * time.Second
)

type queueHarness struct {
	t      *testing.T
	client client.WithWatch
	clock  *clocktesting.FakeClock
	events *events.FakeRecorder
	queue  *Queue
	ctx    context.Context
}

func newQueueHarness(t *testing.T, objs ...client.Object) *queueHarness {
	t.Helper()
	c := newClient(t, objs...)
	clk := clocktesting.NewFakeClock(epoch)
	rec := events.NewFakeRecorder(100)
	ctx, cancel := context.WithCancel(context.Background())
	q := NewQueue(c, c, newPublisher(rec, clk.Now), clk, testTimeout, testPoll, log.Log)
	t.Cleanup(func() { cancel(); q.Wait() })
	return &queueHarness{t: t, client: c, clock: clk, events: rec, queue: q, ctx: ctx}
}

// run starts the queue's passes, as the controller does.
func (h *queueHarness) run() *queueHarness {
	h.queue.RunInBackground(h.ctx)
	return h
}

func (h *queueHarness) nodeClaims() []karpv1.NodeClaim {
	h.t.Helper()
	var list karpv1.NodeClaimList
	if err := h.client.List(context.Background(), &list); err != nil {
		h.t.Fatal(err)
	}
	return list.Items
}

func (h *queueHarness) replacements() []karpv1.NodeClaim {
	var out []karpv1.NodeClaim
	for _, nc := range h.nodeClaims() {
		if nc.Annotations[ReplacementForAnnotationKey] != "" {
			out = append(out, nc)
		}
	}
	return out
}

func (h *queueHarness) nodeClaim(name string) *karpv1.NodeClaim {
	nc := &karpv1.NodeClaim{}
	if err := h.client.Get(context.Background(), client.ObjectKey{Name: name}, nc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		h.t.Fatal(err)
	}
	return nc
}

func (h *queueHarness) node(name string) *corev1.Node {
	n := &corev1.Node{}
	if err := h.client.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		h.t.Fatal(err)
	}
	return n
}

// eventually waits for cond, driving the fake clock by the poll interval; the background
// command advances on each tick. It fails after many ticks, not after a wall-clock time.
func (h *queueHarness) eventually(what string, cond func() bool) {
	h.t.Helper()
	// The fake clock moves at most 500 polls on, as the queue would see in a real run; the
	// real-time limit is generous because a loaded machine may run the queue's goroutine late.
	deadline, steps := time.Now().Add(2*time.Minute), 0
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(time.Millisecond)
		if steps < 500 && h.clock.HasWaiters() {
			h.clock.Step(testPoll)
			steps++
		}
	}
	h.t.Fatalf("never: %s", what)
}

// sawEvent waits for an event that match accepts, reading and dropping the others: the queue
// records events right after the change a test waited for, on its own goroutine.
func (h *queueHarness) sawEvent(match func(string) bool) bool {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case e := <-h.events.Events:
			if match(e) {
				return true
			}
		case <-time.After(10 * time.Millisecond):
		}
	}
	return false
}

func (h *queueHarness) initialize(name string) {
	h.t.Helper()
	nc := h.nodeClaim(name)
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized"})
	if err := h.client.Status().Update(context.Background(), nc); err != nil {
		h.t.Fatal(err)
	}
}

// driftCommand is the command Drift makes for candidate a (one pod) with one replacement.
func driftCommand(t *testing.T, c client.Client) *Command {
	t.Helper()
	cluster, err := LoadCluster(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	m := &Drift{Simulator: &fakeSimulator{}}
	cands, _ := cluster.Candidates(m.Reason(), m.Class())
	allowed, _ := cluster.Allowed(m.Reason(), epoch)
	cmd, _, err := m.ComputeCommand(context.Background(), cluster, allowed, cands)
	if err != nil || cmd == nil {
		t.Fatalf("no drift command: %v", err)
	}
	return cmd
}

func driftObjects() []client.Object {
	return objects(testNodePool("default", budgets(karpv1.Budget{Nodes: "100%"})), pair(testNode("a", "default", drifted)), testPod("web", "node-a"))
}

func TestQueueReplacesThenDeletes(t *testing.T) {
	h := newQueueHarness(t, driftObjects()...).run()
	cmd := driftCommand(t, h.client)
	created := testutil.ToFloat64(nodeClaimsCreated.WithLabelValues("drifted", "default", "false"))
	if err := h.queue.Start(h.ctx, cmd); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(nodeClaimsCreated.WithLabelValues("drifted", "default", "false")) - created; got != 1 {
		t.Errorf("karpenter_nodeclaims_created_total{reason=drifted} rose by %v, want 1", got)
	}
	// Marked, tainted, replacement launched; the candidate stays until it is initialized.
	a := h.nodeClaim("a")
	if a.Annotations[CommandAnnotationKey] != cmd.ID || a.Annotations[ReplacementsAnnotationKey] != "1" {
		t.Errorf("candidate annotations = %v", a.Annotations)
	}
	for _, ct := range []string{karpv1.ConditionTypeDisrupted, karpv1.ConditionTypeDisruptionReason} {
		if c := meta.FindStatusCondition(a.Status.Conditions, ct); c == nil || c.Reason != karpv1.DisruptionReasonDrifted {
			t.Errorf("%s condition = %+v, want True with reason Drifted", ct, c)
		}
	}
	if !hasDisruptedTaint(h.node("node-a")) {
		t.Error("candidate node not tainted karpenter.sh/disrupted:NoSchedule")
	}
	repls := h.replacements()
	if len(repls) != 1 || repls[0].Annotations[ReplacementForAnnotationKey] != cmd.ID {
		t.Fatalf("replacements = %d, want 1 annotated with the command", len(repls))
	}
	h.eventually("waiting event", func() bool { return len(h.events.Events) >= 4 })
	h.clock.Step(testPoll)
	if h.nodeClaim("a") == nil {
		t.Fatal("candidate deleted before its replacement was initialized")
	}
	h.initialize(repls[0].Name)
	h.eventually("candidate deleted", func() bool { return h.nodeClaim("a") == nil })
	if got := len(h.replacements()); got != 1 {
		t.Errorf("replacements = %d after the command, want 1", got)
	}
	// The terminating events are recorded around the delete the test just saw: wait for them.
	var reasons []string
	want := "DisruptionLaunching,DisruptionLaunching,DisruptionWaitingReadiness,DisruptionWaitingReadiness,DisruptionTerminating"
	h.eventually("the terminating events", func() bool {
		for len(h.events.Events) > 0 {
			reasons = append(reasons, strings.Fields(<-h.events.Events)[1])
		}
		return strings.HasPrefix(strings.Join(reasons, ","), want)
	})
	if got := strings.Join(reasons, ","); !strings.HasPrefix(got, want) {
		t.Errorf("event reasons = %s, want %s (node and nodeclaim each)", got, want)
	}
}

func TestQueueRollsBack(t *testing.T) {
	tests := []struct {
		name  string
		cause func(h *queueHarness, repl string)
		why   string
	}{
		{name: "replacement gone (launch failed)", cause: func(h *queueHarness, repl string) {
			if err := h.client.Delete(context.Background(), h.nodeClaim(repl)); err != nil {
				h.t.Fatal(err)
			}
		}, why: "1 of 1 replacement NodeClaims are gone"},
		{name: "replacement never initialized", cause: func(h *queueHarness, _ string) {
			h.clock.Step(testTimeout)
		}, why: "replacements not initialized within 10m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newQueueHarness(t, driftObjects()...).run()
			failures := testutil.ToFloat64(queueFailures.WithLabelValues("replace", "drifted", ""))
			if err := h.queue.Start(h.ctx, driftCommand(t, h.client)); err != nil {
				t.Fatal(err)
			}
			repls := h.replacements()
			if len(repls) != 1 {
				t.Fatalf("replacements = %d", len(repls))
			}
			tt.cause(h, repls[0].Name)
			h.eventually("rolled back", func() bool { return h.queue.Running() == 0 })
			if got := testutil.ToFloat64(queueFailures.WithLabelValues("replace", "drifted", "")) - failures; got != 1 {
				t.Errorf("karpenter_voluntary_disruption_queue_failures_total{decision=replace,reason=drifted} rose by %v, want 1", got)
			}
			a := h.nodeClaim("a")
			if a == nil {
				t.Fatal("candidate deleted, want kept")
			}
			if isMarked(a) || meta.FindStatusCondition(a.Status.Conditions, karpv1.ConditionTypeDisrupted) != nil {
				t.Errorf("candidate still marked: %v %v", a.Annotations, a.Status.Conditions)
			}
			if hasDisruptedTaint(h.node("node-a")) {
				t.Error("candidate node still tainted")
			}
			if got := len(h.replacements()); got != 0 {
				t.Errorf("replacements = %d, want 0", got)
			}
			found := h.sawEvent(func(e string) bool { return strings.Contains(e, "DisruptionBlocked") && strings.Contains(e, tt.why) })
			if !found {
				t.Errorf("no DisruptionBlocked event saying %q", tt.why)
			}
			// Not disrupted again at once: backed off 15 minutes, on the NodeClaim.
			// The queue's passes may step the clock on after the rollback: until is 15 minutes
			// after the rollback, which happened at most a minute of fake time ago.
			until, err := time.Parse(time.RFC3339, a.Annotations[BackoffAnnotationKey])
			latest := h.clock.Now().Add(InitialRollbackBackoff)
			if a.Annotations[RollbacksAnnotationKey] != "1" || err != nil || until.After(latest) || until.Before(latest.Add(-time.Minute)) {
				t.Errorf("back-off annotations %v, want 1 rollback and until about %s", a.Annotations, latest.UTC().Format(time.RFC3339))
			}
		})
	}
}

// TestQueueRecover: a controller restarted in the middle of a command finishes or undoes it
// from what the cluster shows, never launching a second replacement nor leaving a taint.
func TestQueueRecover(t *testing.T) {
	marked := func(id, replacements string) ncOption { return markedBy(id, replacements, epoch.Format(time.RFC3339)) }
	replacement := func(id string, initialized bool) *karpv1.NodeClaim {
		nc, _ := testNode("repl", "default")
		nc.Annotations = map[string]string{ReplacementForAnnotationKey: id}
		if !initialized {
			nc.Status.Conditions = nil
		}
		return nc
	}
	strayNC, strayNode := testNode("stray", "default")
	strayNode.Spec.Taints = []corev1.Taint{disruptedTaint}
	tests := []struct {
		name          string
		objs          []client.Object
		wantCandidate bool // a still exists
		wantTainted   bool
		wantRepls     int
	}{
		{name: "cut short before the replacement was created: rolled back",
			objs: objects(pair(testNode("a", "default", drifted, marked("drift-1", "1")))), wantCandidate: true, wantRepls: 0},
		{name: "replacement initialized: candidate deleted, no second replacement",
			objs: objects(pair(testNode("a", "default", drifted, marked("drift-1", "1"))), replacement("drift-1", true)), wantCandidate: false, wantTainted: true, wantRepls: 1},
		{name: "replacement still launching: keeps waiting",
			objs: objects(pair(testNode("a", "default", drifted, marked("drift-1", "1"))), replacement("drift-1", false)), wantCandidate: true, wantTainted: true, wantRepls: 1},
		{name: "emptiness command cut short before deleting: deleted",
			objs: objects(pair(testNode("a", "default", marked("emptiness-1", "0")))), wantCandidate: false, wantTainted: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newQueueHarness(t, append(tt.objs, testNodePool("default"), strayNC, strayNode)...)
			if err := h.queue.Recover(h.ctx); err != nil {
				t.Fatal(err)
			}
			if got := h.nodeClaim("a") != nil; got != tt.wantCandidate {
				t.Errorf("candidate exists = %t, want %t", got, tt.wantCandidate)
			}
			if tt.wantCandidate {
				if got := hasDisruptedTaint(h.node("node-a")); got != tt.wantTainted {
					t.Errorf("candidate tainted = %t, want %t", got, tt.wantTainted)
				}
			}
			if got := len(h.replacements()); got != tt.wantRepls {
				t.Errorf("replacements = %d, want %d", got, tt.wantRepls)
			}
			if hasDisruptedTaint(h.node("node-stray")) {
				t.Error("a disrupted taint no command holds was left on node-stray")
			}
		})
	}
}

// markedBy marks a candidate as the queue does for command id: annotations, the Disrupted
// condition naming the command, and the taint.
func markedBy(id, replacements, started string) ncOption {
	return func(nc *karpv1.NodeClaim, n *corev1.Node) {
		nc.Annotations = map[string]string{CommandAnnotationKey: id, ReplacementsAnnotationKey: replacements,
			StartedAnnotationKey: started, commandReasonAnnotationKey: karpv1.DisruptionReasonDrifted}
		meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeDisrupted, Status: metav1.ConditionTrue,
			Reason: karpv1.DisruptionReasonDrifted, Message: disruptedMessagePrefix(id) + "drift/Drifted replace", LastTransitionTime: metav1.NewTime(epoch)})
		n.Spec.Taints = []corev1.Taint{disruptedTaint}
	}
}

// TestQueueActsOnAnInitializedReplacementAtOnce: told that the replacement is initialized
// (NodeClaimChanged, from the cache's handler), the queue deletes the candidate without
// waiting for its next poll: the fake clock never moves.
func TestQueueActsOnAnInitializedReplacementAtOnce(t *testing.T) {
	h := newQueueHarness(t, driftObjects()...).run()
	if err := h.queue.Start(h.ctx, driftCommand(t, h.client)); err != nil {
		t.Fatal(err)
	}
	repls := h.replacements()
	if len(repls) != 1 {
		t.Fatalf("replacements = %d, want 1", len(repls))
	}
	// The pass poked by Start has run and waits for its poll.
	deadline := time.Now().Add(2 * time.Minute)
	for !h.clock.HasWaiters() || len(h.queue.wake) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the queue's pass never waited for its poll")
		}
		time.Sleep(time.Millisecond)
	}
	old := repls[0].DeepCopy()
	h.initialize(old.Name)
	h.queue.NodeClaimChanged(old, h.nodeClaim(old.Name))
	for h.nodeClaim("a") != nil {
		if time.Now().After(deadline) {
			t.Fatal("candidate not deleted without a poll once told its replacement is initialized")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestNodeClaimChangesThatWake: which NodeClaim changes wake the queue (a command's step) and
// the loop (a budget freed, a new candidate).
func TestNodeClaimChangesThatWake(t *testing.T) {
	plain, _ := testNode("p", "default")
	meta.RemoveStatusCondition(&plain.Status.Conditions, karpv1.ConditionTypeConsolidatable)
	candidate, _ := testNode("c", "default", markedBy("cmd-1", "1", "2026-12-01T12:00:00Z"))
	deletedCandidate := candidate.DeepCopy()
	deleting(deletedCandidate, nil)
	terminatingCandidate := deletedCandidate.DeepCopy()
	instanceTerminatingClaim(terminatingCandidate, nil)
	replacement, _ := testNode("r", "default", notInitialized, func(nc *karpv1.NodeClaim, _ *corev1.Node) {
		nc.Annotations = map[string]string{ReplacementForAnnotationKey: "cmd-1"}
	})
	initialized := replacement.DeepCopy()
	meta.SetStatusCondition(&initialized.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized"})
	unmarked := candidate.DeepCopy()
	unmarked.Annotations = nil
	otherDeleted, _ := testNode("o", "default", deleting)
	consolidatable := plain.DeepCopy()
	meta.SetStatusCondition(&consolidatable.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeConsolidatable, Status: metav1.ConditionTrue, Reason: "Consolidatable"})
	drifted := plain.DeepCopy()
	meta.SetStatusCondition(&drifted.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeDrifted, Status: metav1.ConditionTrue, Reason: "Drifted"})
	tests := []struct {
		name           string
		old, nc        *karpv1.NodeClaim
		command, freed bool
	}{
		{name: "a node becoming Consolidatable", old: plain, nc: consolidatable, freed: true},
		{name: "a Consolidatable node's other change", old: consolidatable, nc: consolidatable.DeepCopy()},
		{name: "a node drifting", old: plain, nc: drifted, freed: true},
		{name: "a plain NodeClaim's change", old: plain, nc: plain.DeepCopy()},
		{name: "a replacement initialized", old: replacement, nc: initialized, command: true},
		{name: "a replacement gone", old: replacement, command: true},
		{name: "a candidate deleted: still holds its budget", old: candidate, nc: deletedCandidate, command: true},
		{name: "a candidate's instance terminating", old: deletedCandidate, nc: terminatingCandidate, freed: true},
		{name: "a candidate gone", old: terminatingCandidate, command: true, freed: true},
		{name: "a candidate unmarked (rolled back)", old: candidate, nc: unmarked, freed: true},
		{name: "a node deleted by someone else gone", old: otherDeleted, freed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := advancesCommand(tt.old, tt.nc); got != tt.command {
				t.Errorf("wakes the queue: %t, want %t", got, tt.command)
			}
			if got := freesBudget(tt.old, tt.nc) || becameCandidate(tt.old, tt.nc); got != tt.freed {
				t.Errorf("wakes the loop: %t, want %t", got, tt.freed)
			}
		})
	}
}
