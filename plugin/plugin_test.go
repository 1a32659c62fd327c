package plugin

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/simulation"
)

func testPod(namespace, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID(namespace + "-" + name)},
		Spec:       corev1.PodSpec{SchedulerName: "joinery"},
	}
}

// plannerFunc adapts a function to simulation.Planner.
type plannerFunc func(ctx context.Context, pods []*corev1.Pod) (*simulation.Plan, error)

func (f plannerFunc) Plan(ctx context.Context, pods []*corev1.Pod) (*simulation.Plan, error) {
	return f(ctx, pods)
}

// recordingActivator records the pods the plugin moves to the active queue.
type recordingActivator struct {
	mu        sync.Mutex
	activated []string
}

func (a *recordingActivator) Activate(_ klog.Logger, pods map[string]*corev1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for key := range pods {
		a.activated = append(a.activated, key)
	}
	slices.Sort(a.activated)
}

type testEnv struct {
	plugin    *Plugin
	pods      cache.Indexer
	activator *recordingActivator
}

// newTestPlugin builds a plugin for profile "joinery" over a pod indexer holding pods.
// withPlanner false builds it as a scheduler without a solver does.
func newTestPlugin(t *testing.T, withPlanner bool, pods ...*corev1.Pod) *testEnv {
	t.Helper()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, pod := range pods {
		if err := indexer.Add(pod); err != nil {
			t.Fatal(err)
		}
	}
	args, err := DecodeArgs(nil, "joinery")
	if err != nil {
		t.Fatal(err)
	}
	activator := &recordingActivator{}
	deps := dependencies{
		clock:     clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		pods:      corelisters.NewPodLister(indexer),
		activator: activator,
	}
	if withPlanner {
		deps.planner = plannerFunc(func(context.Context, []*corev1.Pod) (*simulation.Plan, error) {
			t.Error("the planner is not called in unit tests")
			return &simulation.Plan{}, nil
		})
	}
	return &testEnv{plugin: newPlugin(args, "joinery", deps), pods: indexer, activator: activator}
}

func postFilterMessage(t *testing.T, p *Plugin, pod *corev1.Pod) string {
	t.Helper()
	result, status := p.PostFilter(t.Context(), framework.NewCycleState(), pod, nil)
	if result != nil {
		t.Errorf("PostFilter returned a result %+v; it never nominates a node", result)
	}
	if status.Code() != fwk.Unschedulable {
		t.Fatalf("PostFilter code %v, want Unschedulable", status.Code())
	}
	return status.Message()
}

func TestPostFilterMessages(t *testing.T) {
	a, b, c := testPod("ns", "a"), testPod("ns", "b"), testPod("ns", "c")
	env := newTestPlugin(t, true, a, b, c)
	p := env.plugin

	if got, want := postFilterMessage(t, p, a), "provisioning: batching 1 pod(s)"; got != want {
		t.Errorf("first pod: %q, want %q", got, want)
	}
	if got, want := postFilterMessage(t, p, b), "provisioning: batching 2 pod(s)"; got != want {
		t.Errorf("second pod: %q, want %q", got, want)
	}
	if got, want := postFilterMessage(t, p, a), "provisioning: batching 2 pod(s)"; got != want {
		t.Errorf("retried pod: %q, want %q (a pod is pending once)", got, want)
	}

	p.nominate("default-x7k2p", []*corev1.Pod{a})
	if got, want := postFilterMessage(t, p, a), "waiting for NodeClaim default-x7k2p"; got != want {
		t.Errorf("waiting pod: %q, want %q", got, want)
	}
	if p.pending.has(a.UID) {
		t.Error("a pod waiting for a NodeClaim is pending again")
	}

	p.recordUnschedulable(map[types.UID]string{c.UID: `no NodePool fits: incompatible with nodepool "default"`}, map[types.UID]*corev1.Pod{c.UID: c})
	if got, want := postFilterMessage(t, p, c), `no NodePool fits: incompatible with nodepool "default"`; got != want {
		t.Errorf("unschedulable pod: %q, want %q", got, want)
	}
	if !p.pending.has(c.UID) {
		t.Error("an unschedulable pod left the pending set; the next batch should try it again")
	}

	other := testPod("ns", "other")
	other.Spec.SchedulerName = "someone-else"
	if got := postFilterMessage(t, p, other); got != "" || p.pending.has(other.UID) {
		t.Errorf("a pod of another scheduler: message %q, pending %v", got, p.pending.has(other.UID))
	}
}

func TestPostFilterWithoutSolver(t *testing.T) {
	pod := testPod("ns", "a")
	env := newTestPlugin(t, false, pod)
	if got := postFilterMessage(t, env.plugin, pod); got != disabledMessage {
		t.Errorf("message %q, want %q", got, disabledMessage)
	}
	if !env.plugin.pending.has(pod.UID) {
		t.Error("without a solver the pod is still reported pending")
	}
}

func TestReserveUnreserve(t *testing.T) {
	pending, waiting, fresh := testPod("ns", "pending"), testPod("ns", "waiting"), testPod("ns", "fresh")
	env := newTestPlugin(t, true, pending, waiting, fresh)
	p := env.plugin
	postFilterMessage(t, p, pending)
	postFilterMessage(t, p, waiting)
	p.nominate("default-abc", []*corev1.Pod{waiting})

	states := map[types.UID]fwk.CycleState{}
	for _, pod := range []*corev1.Pod{pending, waiting, fresh} {
		states[pod.UID] = framework.NewCycleState()
		if status := p.Reserve(t.Context(), states[pod.UID], pod, "node-1"); !status.IsSuccess() {
			t.Fatalf("Reserve %s: %v", pod.Name, status)
		}
	}
	if p.pending.len() != 0 {
		t.Errorf("after Reserve %d pod(s) pending, want 0", p.pending.len())
	}
	if _, ok := p.waits.nodeClaimFor(waiting.UID); ok {
		t.Error("a reserved pod still waits for its NodeClaim")
	}

	for _, pod := range []*corev1.Pod{pending, waiting, fresh} {
		p.Unreserve(t.Context(), states[pod.UID], pod, "node-1")
	}
	if !p.pending.has(pending.UID) {
		t.Error("Unreserve did not put the pending pod back")
	}
	if nc, ok := p.waits.nodeClaimFor(waiting.UID); !ok || nc != "default-abc" {
		t.Errorf("Unreserve restored the wait as %q, %v; want default-abc", nc, ok)
	}
	if p.pending.has(waiting.UID) || p.pending.has(fresh.UID) {
		t.Error("Unreserve made a pod pending that was not pending before Reserve")
	}
}

func TestTakeBatch(t *testing.T) {
	keep, bound, gone, recreated, waiting := testPod("ns", "keep"), testPod("ns", "bound"), testPod("ns", "gone"), testPod("ns", "recreated"), testPod("ns", "waiting")
	env := newTestPlugin(t, true, keep, bound, recreated, waiting)
	p := env.plugin
	for _, pod := range []*corev1.Pod{keep, bound, gone, recreated, waiting} {
		postFilterMessage(t, p, pod)
	}
	p.mu.Lock()
	p.waits.assign("default-abc", waiting.UID)
	p.mu.Unlock()
	boundNow := bound.DeepCopy()
	boundNow.Spec.NodeName = "node-1"
	newer := recreated.DeepCopy()
	newer.UID = "new-uid"
	for _, pod := range []*corev1.Pod{boundNow, newer} {
		if err := env.pods.Update(pod); err != nil {
			t.Fatal(err)
		}
	}

	batch := p.takeBatch()
	if len(batch) != 1 || batch[0].Name != "keep" {
		t.Errorf("batch %v, want only ns/keep", formatPods(batch))
	}
	if p.pending.len() != 1 {
		t.Errorf("%d pod(s) still pending, want 1: pods that no longer need capacity leave the set", p.pending.len())
	}
}

func unschedulableCondition(message string) corev1.PodCondition {
	return corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: message}
}

func TestObservePod(t *testing.T) {
	noNodes := testPod("ns", "no-nodes")
	noNodes.Status.Conditions = []corev1.PodCondition{unschedulableCondition("no nodes available to schedule pods")}
	filtered := testPod("ns", "filtered")
	filtered.Status.Conditions = []corev1.PodCondition{unschedulableCondition("0/3 nodes are available: 3 Insufficient cpu.")}
	foreign := testPod("ns", "foreign")
	foreign.Spec.SchedulerName = "default-scheduler"
	foreign.Status.Conditions = []corev1.PodCondition{unschedulableCondition("0/3 nodes are available: 3 Insufficient cpu.")}
	notOurs := testPod("ns", "not-ours")
	notOurs.Spec.SchedulerName = "another"
	notOurs.Status.Conditions = noNodes.Status.Conditions

	env := newTestPlugin(t, true)
	p := env.plugin
	p.names.Insert("default-scheduler")
	for _, pod := range []*corev1.Pod{noNodes, filtered, foreign, notOurs} {
		p.observePod(t.Context(), pod)
	}
	for pod, want := range map[*corev1.Pod]bool{noNodes: true, filtered: false, foreign: true, notOurs: false} {
		if got := p.pending.has(pod.UID); got != want {
			t.Errorf("%s pending = %v, want %v", pod.Name, got, want)
		}
	}

	bound := noNodes.DeepCopy()
	bound.Spec.NodeName = "node-1"
	p.observePod(t.Context(), bound)
	if p.pending.has(noNodes.UID) {
		t.Error("a bound pod is still pending")
	}
	p.podHandler(t.Context()).OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/foreign", Obj: foreign})
	if p.pending.has(foreign.UID) {
		t.Error("a deleted pod is still pending")
	}
}

func TestObserveNodeClaim(t *testing.T) {
	a, b := testPod("ns", "a"), testPod("ns", "b")
	env := newTestPlugin(t, true, a, b)
	p := env.plugin
	postFilterMessage(t, p, a)
	postFilterMessage(t, p, b)

	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-abc"}}
	simulation.AddPlannedPods(nc, a.UID, b.UID)
	p.observeNodeClaim(t.Context(), nc)
	for _, pod := range []*corev1.Pod{a, b} {
		if name, ok := p.waits.nodeClaimFor(pod.UID); !ok || name != "default-abc" {
			t.Errorf("%s waits for %q, %v; want default-abc", pod.Name, name, ok)
		}
		if p.pending.has(pod.UID) {
			t.Errorf("%s is pending while its NodeClaim launches", pod.Name)
		}
	}
	// Before its node registers, a waiting pod may go nowhere; after, only to that node.
	if _, status := p.PreFilter(t.Context(), nil, a, nil); status.Code() != fwk.UnschedulableAndUnresolvable {
		t.Errorf("PreFilter before the node registers = %v, want UnschedulableAndUnresolvable", status)
	}
	registered := nc.DeepCopy()
	registered.Status.NodeName = "node-abc"
	p.observeNodeClaim(t.Context(), registered)
	result, status := p.PreFilter(t.Context(), nil, a, nil)
	if !status.IsSuccess() || result == nil || !result.NodeNames.Equal(sets.New("node-abc")) {
		t.Errorf("PreFilter after the node registers = %v, %v; want only node-abc", result, status)
	}
	if result, status := p.PreFilter(t.Context(), nil, testPod("ns", "other"), nil); result != nil || !status.IsSuccess() {
		t.Errorf("PreFilter of a pod that waits for nothing = %v, %v; want no restriction", result, status)
	}

	// Initialized: the pods keep waiting, held to the node, and are retried at once.
	initialized := registered.DeepCopy()
	initialized.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue}}
	p.observeNodeClaim(t.Context(), initialized)
	if name, ok := p.waits.nodeClaimFor(a.UID); !ok || name != "default-abc" {
		t.Errorf("a waits for %q, %v after initialization; want default-abc", name, ok)
	}
	if want := []string{"ns/a", "ns/b"}; !slices.Equal(env.activator.activated, want) {
		t.Errorf("activated %v, want %v", env.activator.activated, want)
	}
	// The node is up and still rejects a: its capacity went elsewhere, so a is planned again.
	postFilterMessage(t, p, a)
	if _, ok := p.waits.nodeClaimFor(a.UID); ok {
		t.Error("a still waits for a node that rejected it")
	}
	if !p.pending.has(a.UID) {
		t.Error("a rejected by its initialized node is not pending again")
	}

	// A deleted NodeClaim releases its pods too, tombstone or not.
	p.nodeClaimHandler(t.Context()).OnDelete(cache.DeletedFinalStateUnknown{Key: nc.Name, Obj: nc})
	if _, ok := p.waits.nodeClaimFor(b.UID); ok {
		t.Error("pods still wait for a deleted NodeClaim")
	}
}
