package disruption

import (
	"context"
	"errors"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// faults makes API calls fail, as a webhook denial, an API server restart or a timeout does.
type faults struct {
	mu      sync.Mutex
	refuse  map[string]bool // "delete/<nodeclaim>", "patch/node", "patch/nodeclaim", "create/nodeclaim"
	refused map[string]int
	// onRefuse turns on more refusals when a call is refused.
	onRefuse map[string][]string
}

func newFaults(refuse ...string) *faults {
	f := &faults{refuse: map[string]bool{}, refused: map[string]int{}, onRefuse: map[string][]string{}}
	for _, r := range refuse {
		f.refuse[r] = true
	}
	return f
}

func (f *faults) check(key string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.refuse[key] {
		return nil
	}
	f.refused[key]++
	for _, k := range f.onRefuse[key] {
		f.refuse[k] = true
	}
	return errors.New("injected: admission webhook denied the request (" + key + ")")
}

func (f *faults) set(key string, on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refuse[key] = on
}

func (f *faults) count(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refused[key]
}

func (f *faults) funcs() interceptor.Funcs {
	kind := func(obj client.Object) string {
		switch obj.(type) {
		case *corev1.Node:
			return "node"
		case *karpv1.NodeClaim:
			return "nodeclaim"
		}
		return "other"
	}
	return interceptor.Funcs{
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if err := f.check("delete/" + obj.GetName()); err != nil {
				return err
			}
			return c.Delete(ctx, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := f.check("create/" + kind(obj)); err != nil {
				return err
			}
			return c.Create(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if err := f.check("patch/" + kind(obj)); err != nil {
				return err
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if err := f.check("patch/" + kind(obj)); err != nil {
				return err
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	}
}

// newFaultyQueueHarness is a queue whose API calls go through f; the harness's own client
// sees the cluster as it is.
func newFaultyQueueHarness(t *testing.T, f *faults, objs ...client.Object) *queueHarness {
	t.Helper()
	c := newClient(t, objs...)
	faulty := interceptor.NewClient(c, f.funcs())
	clk := clocktesting.NewFakeClock(epoch)
	rec := events.NewFakeRecorder(1000)
	ctx, cancel := context.WithCancel(context.Background())
	q := NewQueue(faulty, faulty, newPublisher(rec, clk.Now), clk, testTimeout, testPoll, log.Log)
	t.Cleanup(func() { cancel(); q.Wait() })
	return &queueHarness{t: t, client: c, clock: clk, events: rec, queue: q, ctx: ctx}
}

// patiently is eventually with a wall-clock bound generous enough for a loaded machine: it
// polls, driving the fake clock by the poll interval whenever the queue waits on it.
func (h *queueHarness) patiently(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(2 * time.Millisecond)
		if h.clock.HasWaiters() {
			h.clock.Step(testPoll)
		}
	}
	h.t.Fatalf("never: %s", what)
}

// rolledBack reports whether candidate a is kept, unmarked and untainted.
func (h *queueHarness) rolledBack() bool {
	a := h.nodeClaim("a")
	return a != nil && !isMarked(a) && meta.FindStatusCondition(a.Status.Conditions, karpv1.ConditionTypeDisrupted) == nil &&
		!hasDisruptedTaint(h.node("node-a"))
}

// TestQueueRetriesUntilDone: a step refused by the API server (webhook denial, restart,
// timeout) is retried with backoff until the command is finished or rolled back, without a
// restart. On main the command's goroutine gave up at the first failure and left the
// candidate marked, tainted and counted against the budget.
func TestQueueRetriesUntilDone(t *testing.T) {
	emptiness := func(t *testing.T, c client.Client) *Command {
		cluster, err := LoadCluster(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		cands, _ := cluster.Candidates(karpv1.DisruptionReasonEmpty, ClassGraceful)
		return &Command{Method: "emptiness", Reason: karpv1.DisruptionReasonEmpty, Candidates: cands}
	}
	tests := []struct {
		name   string
		refuse string // the call refused until the queue has retried it
		also   []string
		objs   []client.Object
		start  func(t *testing.T, c client.Client) *Command
		cause  func(h *queueHarness) // after the start
		want   func(h *queueHarness) bool
	}{
		{name: "candidate delete refused after the replacement initialized", refuse: "delete/a", objs: driftObjects(), start: driftCommand,
			cause: func(h *queueHarness) { h.initialize(h.replacements()[0].Name) },
			want:  func(h *queueHarness) bool { return h.nodeClaim("a") == nil }},
		{name: "candidate delete refused, command without replacements", refuse: "delete/a",
			objs:  objects(testNodePool("default", budgets(karpv1.Budget{Nodes: "100%"})), pair(testNode("a", "default"))),
			start: emptiness, want: func(h *queueHarness) bool { return h.nodeClaim("a") == nil }},
		{name: "untaint refused while rolling back a failed launch", refuse: "patch/node", objs: driftObjects(), start: driftCommand,
			cause: func(h *queueHarness) {
				if err := h.client.Delete(context.Background(), h.nodeClaim(h.replacements()[0].Name)); err != nil {
					h.t.Fatal(err)
				}
			},
			want: (*queueHarness).rolledBack},
		{name: "unmark refused while rolling back a timed-out command", refuse: "patch/nodeclaim", objs: driftObjects(), start: driftCommand,
			cause: func(h *queueHarness) { h.clock.Step(testTimeout) },
			want:  (*queueHarness).rolledBack},
		{name: "start fails creating the replacement, then its rollback fails", refuse: "create/nodeclaim", also: []string{"patch/nodeclaim"},
			objs: driftObjects(), start: driftCommand,
			want: func(h *queueHarness) bool { return h.rolledBack() && len(h.replacements()) == 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFaults()
			f.onRefuse[tt.refuse] = tt.also
			h := newFaultyQueueHarness(t, f, tt.objs...).run()
			cmd := tt.start(t, h.client)
			if tt.cause == nil {
				f.set(tt.refuse, true)
			}
			_ = h.queue.Start(h.ctx, cmd) // a failed start is rolled back by the passes
			if tt.cause != nil {
				f.set(tt.refuse, true)
				tt.cause(h)
			}
			// Refused again and again: the queue keeps trying, and nothing is done yet.
			watched := tt.refuse
			if len(tt.also) > 0 {
				watched = tt.also[0]
			}
			h.patiently("the refused call retried", func() bool { return f.count(watched) >= 3 })
			if tt.want(h) {
				t.Fatal("done while the call was refused")
			}
			f.set(tt.refuse, false)
			for _, k := range tt.also {
				f.set(k, false)
			}
			h.patiently("command finished", func() bool { return tt.want(h) && h.queue.Running() == 0 })
		})
	}
}

// TestQueueRemovesStrayTaintsOnEveryPass: a disrupted taint no command holds is removed by a
// running queue, not only at start-up.
func TestQueueRemovesStrayTaintsOnEveryPass(t *testing.T) {
	h := newQueueHarness(t, objects(testNodePool("default"), pair(testNode("a", "default")))...).run()
	// The first pass is over once the loop waits on the clock. Not patiently: it steps the
	// clock whenever the loop waits, so the loop is always just woken when it looks, and
	// the test waited from milliseconds to minutes.
	deadline := time.Now().Add(time.Minute)
	for !h.clock.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("the queue's first pass never ended")
		}
		time.Sleep(time.Millisecond)
	}
	n := h.node("node-a")
	n.Spec.Taints = append(n.Spec.Taints, disruptedTaint)
	if err := h.client.Update(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	h.patiently("stray taint removed", func() bool { return !hasDisruptedTaint(h.node("node-a")) })
}

// TestQueueNeverActsOnCorruptOrStrayMarks: a command annotation no command of this cluster
// made (no Disrupted condition naming it, as when GitOps copies annotations) is removed with
// an event and the NodeClaim kept, do-not-disrupt or not; a command whose replacements count
// or start time is missing or does not parse is rolled back. On main each of these NodeClaims
// was deleted: the count read as 0 replacements, all "initialized".
func TestQueueNeverActsOnCorruptOrStrayMarks(t *testing.T) {
	stray := func(nc *karpv1.NodeClaim, _ *corev1.Node) {
		nc.Annotations[CommandAnnotationKey] = "emptiness-copied"
		nc.Annotations[ReplacementsAnnotationKey] = "0"
		nc.Annotations[StartedAnnotationKey] = epoch.Format(time.RFC3339)
	}
	without := func(key string) ncOption {
		return func(nc *karpv1.NodeClaim, _ *corev1.Node) { delete(nc.Annotations, key) }
	}
	started := epoch.Format(time.RFC3339)
	tests := []struct {
		name  string
		opts  []ncOption
		event string
	}{
		{name: "stray mark on a do-not-disrupt NodeClaim", opts: []ncOption{claimAnnotated, stray}, event: EventStrayDisruptionCommand},
		{name: "stray mark", opts: []ncOption{func(nc *karpv1.NodeClaim, _ *corev1.Node) { nc.Annotations = map[string]string{} }, stray},
			event: EventStrayDisruptionCommand},
		{name: "replacements unparseable", opts: []ncOption{markedBy("emptiness-1", "none", started)}, event: "no valid " + ReplacementsAnnotationKey},
		{name: "replacements missing", opts: []ncOption{markedBy("emptiness-1", "0", started), without(ReplacementsAnnotationKey)},
			event: "no valid " + ReplacementsAnnotationKey},
		{name: "start time unparseable", opts: []ncOption{markedBy("emptiness-1", "0", "yesterday")}, event: "no valid " + StartedAnnotationKey},
		{name: "start time missing", opts: []ncOption{markedBy("emptiness-1", "0", started), without(StartedAnnotationKey)},
			event: "no valid " + StartedAnnotationKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newQueueHarness(t, objects(testNodePool("default", budgets(karpv1.Budget{Nodes: "100%"})), pair(testNode("a", "default", tt.opts...)))...)
			if err := h.queue.Recover(h.ctx); err != nil {
				t.Fatal(err)
			}
			if !h.rolledBack() {
				t.Fatalf("candidate a deleted, still marked or still tainted: %+v", h.nodeClaim("a"))
			}
			found := h.sawEvent(func(e string) bool { return strings.Contains(e, tt.event) })
			if !found {
				t.Errorf("no event saying %q", tt.event)
			}
		})
	}
}

// TestTerminateCountsACandidateOnce: a pass whose cache still shows a candidate it deleted
// (no deletion timestamp yet) neither deletes, counts nor announces it again. Before, a
// consolidated node was counted twice in karpenter_nodeclaims_disrupted_total.
func TestTerminateCountsACandidateOnce(t *testing.T) {
	h := newQueueHarness(t, driftObjects()...)
	stale := h.nodeClaim("a")
	stale.Annotations = map[string]string{commandReasonAnnotationKey: karpv1.DisruptionReasonDrifted}
	counter := disruptedTotal.WithLabelValues(MetricReason(karpv1.DisruptionReasonDrifted), stale.Labels[karpv1.NodePoolLabelKey], stale.Labels[karpv1.CapacityTypeLabelKey])
	before := testutil.ToFloat64(counter)
	for range 2 {
		if err := h.queue.terminate(h.ctx, []*karpv1.NodeClaim{stale.DeepCopy()}); err != nil {
			t.Fatal(err)
		}
	}
	if got := testutil.ToFloat64(counter) - before; got != 1 {
		t.Errorf("disrupted counted %v times, want 1", got)
	}
}
