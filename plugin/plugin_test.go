package plugin

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
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

func (a *recordingActivator) keys() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.activated)
}

func (a *recordingActivator) reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.activated = nil
}

type testEnv struct {
	plugin    *Plugin
	pods      cache.Indexer
	activator *recordingActivator
	clock     *clocktesting.FakeClock
}

// newTestPlugin builds a plugin for profile "joinery" over a pod indexer holding pods.
// withPlanner false builds it as a scheduler without a solver does.
func newTestPlugin(t *testing.T, withPlanner bool, pods ...*corev1.Pod) *testEnv {
	t.Helper()
	return newTrackedTestPlugin(t, withPlanner, nil, pods...)
}

// newPlanOfTwo is a plugin whose one plan put pod on NodeClaim default-a and sibling on
// default-b.
func newPlanOfTwo(t *testing.T) (env *testEnv, pod, sibling *corev1.Pod) {
	t.Helper()
	pod, sibling = testPod("ns", "pod"), testPod("ns", "sibling")
	env = newTestPlugin(t, true, pod, sibling)
	env.plugin.nominate(1, "default-a", []*corev1.Pod{pod})
	env.plugin.nominate(1, "default-b", []*corev1.Pod{sibling})
	return env, pod, sibling
}

// newTrackedTestPlugin is newTestPlugin with a readiness tracker (Options.Readiness).
func newTrackedTestPlugin(t *testing.T, withPlanner bool, readiness *SyncTracker, pods ...*corev1.Pod) *testEnv {
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
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	deps := dependencies{
		clock:     clock,
		pods:      corelisters.NewPodLister(indexer),
		activator: activator,
		readiness: readiness,
	}
	if withPlanner {
		deps.planner = plannerFunc(func(context.Context, []*corev1.Pod) (*simulation.Plan, error) {
			t.Error("the planner is not called in unit tests")
			return &simulation.Plan{}, nil
		})
	}
	return &testEnv{plugin: newPlugin(t.Context(), args, "joinery", deps), pods: indexer, activator: activator, clock: clock}
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

	p.nominate(1, "default-x7k2p", []*corev1.Pod{a})
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
	p.nominate(1, "default-abc", []*corev1.Pod{waiting})

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
	insufficient := framework.NewDefaultNodeToStatus()
	insufficient.Set("node-abc", fwk.NewStatus(fwk.Unschedulable, "Insufficient cpu").WithPlugin("NodeResourcesFit"))
	p.PostFilter(t.Context(), framework.NewCycleState(), a, insufficient)
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

// TestPinnedPodRejectedByItsNode: a pod whose initialized node rejects it is planned again at
// once when the rule is one its plan cannot outgrow, and keeps its pin while the rule counts
// other pods and another pod of its plan is still on its way, until PlanHoldDuration.
func TestPinnedPodRejectedByItsNode(t *testing.T) {
	cases := []struct {
		name string
		// rejectedBy is the Filter that rejects the pinned node; "" leaves the node out of
		// the statuses, as when the cycle's snapshot does not hold it yet.
		rejectedBy string
		// siblingWaits keeps the other pod of the plan waiting for its launching NodeClaim.
		siblingWaits bool
		// elapsed passes between the first rejection and the one checked.
		elapsed time.Duration
		// nodeTaints are the node's taints in the cycle's snapshot; ownTaints the NodeClaim's.
		nodeTaints, ownTaints []corev1.Taint
		wantHeld              bool
	}{
		{name: "resources, plan still arriving", rejectedBy: "NodeResourcesFit", siblingWaits: true, wantHeld: false},
		{name: "taint, plan still arriving", rejectedBy: "TaintToleration", siblingWaits: true, wantHeld: false},
		{name: "node affinity, plan still arriving", rejectedBy: "NodeAffinity", siblingWaits: true, wantHeld: false},
		{name: "volumes, plan still arriving", rejectedBy: "VolumeBinding", siblingWaits: true, wantHeld: false},
		{name: "spread, plan still arriving", rejectedBy: "PodTopologySpread", siblingWaits: true, wantHeld: true},
		{name: "pod affinity, plan still arriving", rejectedBy: "InterPodAffinity", siblingWaits: true, wantHeld: true},
		{name: "spread, plan complete", rejectedBy: "PodTopologySpread", siblingWaits: false, wantHeld: false},
		{name: "spread, hold ran out", rejectedBy: "PodTopologySpread", siblingWaits: true, elapsed: DefaultPlanHoldDuration, wantHeld: false},
		{name: "spread, within the hold", rejectedBy: "PodTopologySpread", siblingWaits: true, elapsed: DefaultPlanHoldDuration - time.Second, wantHeld: true},
		{name: "node not in the snapshot yet", rejectedBy: "", siblingWaits: false, wantHeld: true},
		{name: "snapshot still has the not-ready taint", rejectedBy: "TaintToleration",
			nodeTaints: []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}, wantHeld: true},
		{name: "the NodeClaim's own taint", rejectedBy: "TaintToleration",
			nodeTaints: []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}},
			ownTaints:  []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}, wantHeld: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env, pod, sibling := newPlanOfTwo(t)
			p := env.plugin
			initialized := []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue}}
			p.observeNodeClaim(t.Context(), &karpv1.NodeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: "default-a"},
				Spec:       karpv1.NodeClaimSpec{Taints: tc.ownTaints},
				Status:     karpv1.NodeClaimStatus{NodeName: "node-a", Conditions: initialized},
			})
			snapshot := schedcache.NewSnapshot(nil, []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Spec: corev1.NodeSpec{Taints: tc.nodeTaints}}})
			p.nodeInfos = snapshot.NodeInfos
			if !tc.siblingWaits {
				p.Reserve(t.Context(), framework.NewCycleState(), sibling, "node-b")
			}
			statuses := framework.NewDefaultNodeToStatus()
			if tc.rejectedBy != "" {
				statuses.Set("node-a", fwk.NewStatus(fwk.Unschedulable, "rejected").WithPlugin(tc.rejectedBy))
			}
			postFilter := func() string {
				_, status := p.PostFilter(t.Context(), framework.NewCycleState(), pod, statuses)
				return status.Message()
			}
			msg := postFilter()
			if tc.elapsed > 0 {
				env.clock.Step(tc.elapsed)
				msg = postFilter()
			}
			_, waits := p.waits.nodeClaimFor(pod.UID)
			if waits != tc.wantHeld || p.pending.has(pod.UID) == tc.wantHeld {
				t.Errorf("pod waits %v, pending %v (message %q); want held %v", waits, p.pending.has(pod.UID), msg, tc.wantHeld)
			}
			if tc.wantHeld && !strings.Contains(msg, "waiting for NodeClaim default-a") {
				t.Errorf("message %q, want it to say the pod waits for default-a", msg)
			}
		})
	}
}

// TestPinStaleWithinItsCycle (flake of TestZoneSpreadPinHoldsWhileItsPlanArrives): a pod's
// cycle began while its NodeClaim named no node yet, so the pin kept it off every node, and
// the NodeClaim's update (node named and initialized at once) arrived before PostFilter. Its
// pinned node was never tried: the pod keeps its pin rather than being planned again.
func TestPinStaleWithinItsCycle(t *testing.T) {
	cases := []struct {
		name string
		// stale runs the cycle's pin checks before the NodeClaim's update and returns the
		// statuses kube-scheduler hands PostFilter.
		stale func(t *testing.T, p *Plugin, pod *corev1.Pod) *framework.NodeToStatus
	}{
		{
			name: "PreFilter found no node",
			stale: func(t *testing.T, p *Plugin, pod *corev1.Pod) *framework.NodeToStatus {
				_, status := p.PreFilter(t.Context(), framework.NewCycleState(), pod, nil)
				if status.IsSuccess() {
					t.Fatal("PreFilter passed a pod whose NodeClaim names no node")
				}
				// As the framework does: every node gets PreFilter's status, with its plugin.
				statuses := framework.NewDefaultNodeToStatus()
				statuses.SetAbsentNodesStatus(status.WithPlugin(Name))
				return statuses
			},
		},
		{
			name: "Filter kept it off a node the pin did not name",
			stale: func(t *testing.T, p *Plugin, pod *corev1.Pod) *framework.NodeToStatus {
				info := framework.NewNodeInfo()
				info.SetNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}})
				status := p.Filter(t.Context(), framework.NewCycleState(), pod, info)
				if status.IsSuccess() {
					t.Fatal("Filter passed a node the pin does not name")
				}
				statuses := framework.NewDefaultNodeToStatus()
				statuses.Set("node-a", status.WithPlugin(Name))
				return statuses
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env, pod, _ := newPlanOfTwo(t)
			p := env.plugin
			p.observeNodeClaim(t.Context(), &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-a"}})
			statuses := tc.stale(t, p, pod)
			p.observeNodeClaim(t.Context(), &karpv1.NodeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: "default-a"},
				Status: karpv1.NodeClaimStatus{NodeName: "node-a", Conditions: []metav1.Condition{
					{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue},
				}},
			})
			p.nodeInfos = schedcache.NewSnapshot(nil, []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}}).NodeInfos
			_, status := p.PostFilter(t.Context(), framework.NewCycleState(), pod, statuses)
			if nodeClaim, waits := p.waits.nodeClaimFor(pod.UID); !waits || nodeClaim != "default-a" || p.pending.has(pod.UID) {
				t.Errorf("pod waits for %q (%v), pending %v (message %q); want it to keep its pin to default-a",
					nodeClaim, waits, p.pending.has(pod.UID), status.Message())
			}
		})
	}
}

// TestHeldPodRetried: a held pod is moved to the active queue when a pod of its plan is
// placed, and when its hold runs out.
func TestHeldPodRetried(t *testing.T) {
	pod, sibling, other := testPod("ns", "pod"), testPod("ns", "sibling"), testPod("ns", "other")
	env := newTestPlugin(t, true, pod, sibling, other)
	p := env.plugin
	p.nominate(1, "default-a", []*corev1.Pod{pod})
	p.nominate(1, "default-b", []*corev1.Pod{sibling})
	p.nominate(2, "default-c", []*corev1.Pod{other})
	initialized := []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue}}
	p.observeNodeClaim(t.Context(), &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "default-a"},
		Status:     karpv1.NodeClaimStatus{NodeName: "node-a", Conditions: initialized},
	})
	env.activator.reset()
	statuses := framework.NewDefaultNodeToStatus()
	statuses.Set("node-a", fwk.NewStatus(fwk.Unschedulable, "spread").WithPlugin("PodTopologySpread"))
	p.PostFilter(t.Context(), framework.NewCycleState(), pod, statuses)

	// A pod of another plan is placed: nothing to retry.
	p.Reserve(t.Context(), framework.NewCycleState(), other, "node-c")
	// The sibling is placed: the held pod is retried (from a goroutine).
	p.Reserve(t.Context(), framework.NewCycleState(), sibling, "node-b")
	if err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return len(env.activator.keys()) > 0, nil
	}); err != nil {
		t.Fatalf("the held pod was not retried when its sibling was placed: %v", err)
	}
	if got, want := env.activator.keys(), []string{"ns/pod"}; !slices.Equal(got, want) {
		t.Errorf("activated %v, want %v", got, want)
	}

	// Hold it again behind a new sibling; the hold's end retries it too.
	env.activator.reset()
	p.Unreserve(t.Context(), framework.NewCycleState(), sibling, "node-b") // no state: a no-op
	p.nominate(1, "default-b", []*corev1.Pod{sibling})
	p.PostFilter(t.Context(), framework.NewCycleState(), pod, statuses)
	env.clock.Step(DefaultPlanHoldDuration)
	if err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return slices.Contains(env.activator.keys(), "ns/pod"), nil
	}); err != nil {
		t.Fatalf("the held pod was not retried when its hold ran out: %v", err)
	}
}

// TestPlanningFailures: a planner that panics costs one batch — the panic is recovered and
// counted, the batch's pods get an event and are left out of batches until their quarantine
// ends — and a planner that overruns planTimeout is abandoned.
func TestPlanningFailures(t *testing.T) {
	RegisterMetrics()
	cases := []struct {
		name string
		plan func(ctx context.Context) (*simulation.Plan, error)
		// wantQuarantine: the pods are out of batches until the quarantine ends.
		wantQuarantine bool
		metric         *metrics.CounterVec
	}{
		{name: "panic", plan: func(context.Context) (*simulation.Plan, error) { panic("solver bug") },
			wantQuarantine: true, metric: solverPanics},
		{name: "nil map write", plan: func(context.Context) (*simulation.Plan, error) {
			var m map[string]int
			m["x"]++
			return nil, nil
		}, wantQuarantine: true, metric: solverPanics},
		{name: "overruns its deadline", plan: func(ctx context.Context) (*simulation.Plan, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}, wantQuarantine: false, metric: planTimeouts},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, b := testPod("ns", "a"), testPod("ns", "b")
			env := newTestPlugin(t, true, a, b)
			p := env.plugin
			p.args.PlanTimeout.Duration = 10 * time.Millisecond
			recorder := events.NewFakeRecorder(10)
			p.recorder = recorder
			p.planner = plannerFunc(func(ctx context.Context, _ []*corev1.Pod) (*simulation.Plan, error) { return tc.plan(ctx) })
			postFilterMessage(t, p, a)
			postFilterMessage(t, p, b)
			before, err := testutil.GetCounterMetricValue(tc.metric.WithLabelValues("joinery"))
			if err != nil {
				t.Fatal(err)
			}

			p.provisionBatch(t.Context()) // must not panic

			after, err := testutil.GetCounterMetricValue(tc.metric.WithLabelValues("joinery"))
			if err != nil {
				t.Fatal(err)
			}
			if after != before+1 {
				t.Errorf("metric went from %v to %v, want +1", before, after)
			}
			if !p.pending.has(a.UID) || !p.pending.has(b.UID) {
				t.Error("the batch's pods left the pending set; they must stay pending")
			}
			batch := p.takeBatch()
			if got := len(batch) == 0; got != tc.wantQuarantine {
				t.Errorf("next batch %v; want the pods quarantined: %v", formatPods(batch), tc.wantQuarantine)
			}
			if !tc.wantQuarantine {
				return
			}
			if msg := postFilterMessage(t, p, a); !strings.Contains(msg, "quarantined") {
				t.Errorf("message %q, want it to say the pod is quarantined", msg)
			}
			for range 2 {
				select {
				case ev := <-recorder.Events:
					if !strings.Contains(ev, "FailedScheduling") || !strings.Contains(ev, "quarantined") {
						t.Errorf("event %q, want a FailedScheduling event saying the pod is quarantined", ev)
					}
				default:
					t.Fatal("fewer than one event per pod of the batch")
				}
			}
			env.clock.Step(p.args.QuarantineDuration.Duration)
			if batch := p.takeBatch(); len(batch) != 2 {
				t.Errorf("after the quarantine the batch is %v, want both pods", formatPods(batch))
			}
		})
	}
}

// TestWritesObserved: a batch waits until the NodeClaim informer shows the NodeClaims this
// process wrote, so the solver, which reads NodeClaims from that informer, counts them.
func TestWritesObserved(t *testing.T) {
	a, b := testPod("ns", "a"), testPod("ns", "b")
	cases := []struct {
		name         string
		observed     *karpv1.NodeClaim
		wantObserved bool
	}{
		{name: "not seen yet", observed: nil, wantObserved: false},
		{name: "seen without the added pod", observed: withPlanned("default-a", a.UID), wantObserved: false},
		{name: "seen with every written pod", observed: withPlanned("default-a", a.UID, b.UID), wantObserved: true},
		{name: "another NodeClaim seen", observed: withPlanned("default-b", a.UID, b.UID), wantObserved: false},
		{name: "seen being deleted", observed: deleting(withPlanned("default-a")), wantObserved: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := newTestPlugin(t, true, a, b)
			p := env.plugin
			p.launches.expectWritten("default-a", []types.UID{a.UID})
			p.launches.expectWritten("default-a", []types.UID{b.UID})
			if tc.observed != nil {
				p.observeNodeClaim(t.Context(), tc.observed)
			}
			if got := p.launches.writesUnobserved() == 0; got != tc.wantObserved {
				t.Errorf("writes observed = %v, want %v", got, tc.wantObserved)
			}
		})
	}

	// awaitWritesObserved returns once the informer shows the write.
	env := newTestPlugin(t, true, a)
	p := env.plugin
	p.launches.expectWritten("default-a", []types.UID{a.UID})
	done := make(chan struct{})
	go func() {
		p.awaitWritesObserved(t.Context())
		close(done)
	}()
	p.observeNodeClaim(t.Context(), withPlanned("default-a", a.UID))
	<-done
}

func withPlanned(name string, pods ...types.UID) *karpv1.NodeClaim {
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
	simulation.AddPlannedPods(nc, pods...)
	return nc
}

func deleting(nc *karpv1.NodeClaim) *karpv1.NodeClaim {
	now := metav1.Now()
	nc.DeletionTimestamp = &now
	return nc
}

// recordingNominator records the nominations the plugin makes.
type recordingNominator struct {
	mu        sync.Mutex
	nominated map[string]string // pod name to node
}

func (n *recordingNominator) AddNominatedPod(_ klog.Logger, pod fwk.PodInfo, info *fwk.NominatingInfo) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.nominated[pod.GetPod().Name] = info.NominatedNodeName
}
func (n *recordingNominator) DeleteNominatedPodIfExists(*corev1.Pod)                   {}
func (n *recordingNominator) UpdateNominatedPod(klog.Logger, *corev1.Pod, fwk.PodInfo) {}
func (n *recordingNominator) NominatedPodsForNode(string) []fwk.PodInfo                { return nil }

// TestPlannedPodsNominatedToTheirNode: once a NodeClaim's node registers, its waiting pods are
// nominated there (kube-scheduler then keeps other pods off the capacity planned for them),
// PostFilter keeps the nomination, and a pod planned again has it cleared.
func TestPlannedPodsNominatedToTheirNode(t *testing.T) {
	a, b := testPod("ns", "a"), testPod("ns", "b")
	env := newTestPlugin(t, true, a, b)
	p := env.plugin
	nominator := &recordingNominator{nominated: map[string]string{}}
	p.nominator = nominator
	postFilterMessage(t, p, a) // the plugin has seen the pods
	postFilterMessage(t, p, b)
	p.nominate(1, "default-a", []*corev1.Pod{a, b})
	p.observeNodeClaim(t.Context(), &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-a"}})
	if len(nominator.nominated) != 0 {
		t.Errorf("nominated %v before the node registered", nominator.nominated)
	}
	p.observeNodeClaim(t.Context(), &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-a"}, Status: karpv1.NodeClaimStatus{NodeName: "node-a"}})
	if want := map[string]string{"a": "node-a", "b": "node-a"}; !maps.Equal(nominator.nominated, want) {
		t.Errorf("nominated %v, want %v", nominator.nominated, want)
	}

	result, _ := p.PostFilter(t.Context(), framework.NewCycleState(), a, nil)
	if result == nil || result.NominatingInfo == nil || result.NominatedNodeName != "node-a" || result.Mode() != fwk.ModeOverride {
		t.Errorf("PostFilter of a pod waiting for a registered node returned %+v, want it nominated to node-a", result)
	}

	// Its node is initialized and rejects it for good: planned again, nomination cleared.
	initialized := []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue}}
	p.observeNodeClaim(t.Context(), &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-a"}, Status: karpv1.NodeClaimStatus{NodeName: "node-a", Conditions: initialized}})
	statuses := framework.NewDefaultNodeToStatus()
	statuses.Set("node-a", fwk.NewStatus(fwk.Unschedulable, "Insufficient cpu").WithPlugin("NodeResourcesFit"))
	nominatedA := a.DeepCopy()
	nominatedA.Status.NominatedNodeName = "node-a"
	result, _ = p.PostFilter(t.Context(), framework.NewCycleState(), nominatedA, statuses)
	if result == nil || result.NominatingInfo == nil || result.NominatedNodeName != "" || result.Mode() != fwk.ModeOverride {
		t.Errorf("PostFilter of a pod planned again returned %+v, want its nomination cleared", result)
	}
}

// TestPlannedPodsAnnotationTrust (issue 17, defect 9): a NodeClaim's planned-pods annotation
// holds back only pods of a schedulerName the plugin serves, also when the NodeClaim is seen
// before the pod.
func TestPlannedPodsAnnotationTrust(t *testing.T) {
	served, later, foreign := testPod("ns", "served"), testPod("ns", "later"), testPod("ns", "foreign")
	foreign.Spec.SchedulerName = "someone-else"
	foreign.Status.Conditions = []corev1.PodCondition{unschedulableCondition("0/3 nodes are available")}
	env := newTestPlugin(t, true, served, later, foreign)
	p := env.plugin
	p.observePod(t.Context(), served)
	p.observePod(t.Context(), foreign)

	nc := withPlanned("default-a", served.UID, later.UID, foreign.UID)
	p.observeNodeClaim(t.Context(), nc)
	p.observePod(t.Context(), later) // seen after the NodeClaim

	for pod, want := range map[*corev1.Pod]bool{served: true, later: true, foreign: false} {
		if _, waits := p.waits.nodeClaimFor(pod.UID); waits != want {
			t.Errorf("%s waits for the NodeClaim = %v, want %v", pod.Name, waits, want)
		}
	}

	// Once the NodeClaim is gone its entries are forgotten: a pod seen afterwards is free.
	p.nodeClaimHandler(t.Context()).OnDelete(nc)
	p.observePod(t.Context(), later)
	if _, waits := p.waits.nodeClaimFor(later.UID); waits {
		t.Error("a pod waits for a deleted NodeClaim")
	}
}

// TestHoldCountsPodsInFlightWhenPlanned: a plan relies on the pods that were on their way to
// other NodeClaims when it was made (the solver counted them in their zones), so a pod of it
// rejected by PodTopologySpread keeps its pin while one of those still waits, and is retried
// when it is placed.
func TestHoldCountsPodsInFlightWhenPlanned(t *testing.T) {
	pod, earlier := testPod("ns", "pod"), testPod("ns", "earlier")
	env := newTestPlugin(t, true, pod, earlier)
	p := env.plugin
	postFilterMessage(t, p, pod)
	postFilterMessage(t, p, earlier)
	p.nominate(p.holds.beginPlan(nil), "default-earlier", []*corev1.Pod{earlier})
	p.nominate(p.holds.beginPlan(sets.New(earlier.UID)), "default-a", []*corev1.Pod{pod})
	initialized := []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue}}
	p.observeNodeClaim(t.Context(), &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-a"}, Status: karpv1.NodeClaimStatus{NodeName: "node-a", Conditions: initialized}})
	env.activator.reset()

	statuses := framework.NewDefaultNodeToStatus()
	statuses.Set("node-a", fwk.NewStatus(fwk.Unschedulable, "spread").WithPlugin("PodTopologySpread"))
	p.PostFilter(t.Context(), framework.NewCycleState(), pod, statuses)
	if _, waits := p.waits.nodeClaimFor(pod.UID); !waits || p.pending.has(pod.UID) {
		t.Fatal("the pod was planned again while a pod its plan counted on was still on its way")
	}
	p.Reserve(t.Context(), framework.NewCycleState(), earlier, "node-earlier")
	if err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return slices.Contains(env.activator.keys(), "ns/pod"), nil
	}); err != nil {
		t.Fatalf("the held pod was not retried when the pod its plan counted on was placed: %v", err)
	}
	// Nothing of its plan is on its way any more: a rejection now is final.
	p.PostFilter(t.Context(), framework.NewCycleState(), pod, statuses)
	if !p.pending.has(pod.UID) {
		t.Error("the pod keeps its pin though nothing its plan counted on is on its way")
	}
}

// TestFilterKeepsPinnedPodsOnTheirNode: a pod waiting for a NodeClaim passes Filter only on
// that NodeClaim's node — also on its nominated node from an earlier plan, which
// kube-scheduler tries regardless of PreFilter — and other pods pass everywhere.
func TestFilterKeepsPinnedPodsOnTheirNode(t *testing.T) {
	pinned, free := testPod("ns", "pinned"), testPod("ns", "free")
	env := newTestPlugin(t, true, pinned, free)
	p := env.plugin
	p.nominate(1, "default-a", []*corev1.Pod{pinned})
	node := func(name string) fwk.NodeInfo {
		info := framework.NewNodeInfo()
		info.SetNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
		return info
	}
	cases := []struct {
		name       string
		registered bool
		pod        *corev1.Pod
		node       string
		wantPass   bool
	}{
		{name: "pinned, its node not registered", pod: pinned, node: "node-old", wantPass: false},
		{name: "pinned, another node", registered: true, pod: pinned, node: "node-old", wantPass: false},
		{name: "pinned, its node", registered: true, pod: pinned, node: "node-a", wantPass: true},
		{name: "not pinned", registered: true, pod: free, node: "node-old", wantPass: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-a"}}
			if tc.registered {
				nc.Status.NodeName = "node-a"
			}
			p.observeNodeClaim(t.Context(), nc)
			status := p.Filter(t.Context(), framework.NewCycleState(), tc.pod, node(tc.node))
			if status.IsSuccess() != tc.wantPass {
				t.Errorf("Filter = %v, want pass %v", status, tc.wantPass)
			}
		})
	}
}

// TestFilterKeepsOtherPodsOffPromisedCapacity: a registered node whose NodeClaim still has
// pods waiting for it takes another pod only beside them — their requests counted, and no
// required anti-affinity between them either way — so the pod it was planned for is not
// turned away by its own node (issue 17: pods bound into capacity held pods were planned for,
// which were then planned again onto new NodeClaims).
func TestFilterKeepsOtherPodsOffPromisedCapacity(t *testing.T) {
	withRequests := func(pod *corev1.Pod, cpu string, labels map[string]string) *corev1.Pod {
		pod.Labels = labels
		pod.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
		}}}
		return pod
	}
	avoid := func(pod *corev1.Pod, key, value string) *corev1.Pod {
		pod.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey:   corev1.LabelHostname,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{key: value}},
			}},
		}}
		return pod
	}
	promised := withRequests(testPod("ns", "promised"), "600m", map[string]string{"tier": "a"})
	cases := []struct {
		name     string
		promised *corev1.Pod
		pod      *corev1.Pod
		node     string
		// byProviderID leaves the node's name out of the NodeClaim's status: the node lost
		// its unregistered taint before the NodeClaim named it.
		byProviderID bool
		wantPass     bool
	}{
		{name: "takes the cpu of a node the NodeClaim does not name yet", promised: promised, pod: withRequests(testPod("ns", "early"), "600m", nil), node: "node-a", byProviderID: true, wantPass: false},
		{name: "fits beside the waiting pod", promised: promised, pod: withRequests(testPod("ns", "small"), "300m", nil), node: "node-a", wantPass: true},
		{name: "takes the waiting pod's cpu", promised: promised, pod: withRequests(testPod("ns", "big"), "600m", nil), node: "node-a", wantPass: false},
		{name: "avoids the waiting pod", promised: promised, pod: avoid(withRequests(testPod("ns", "avoids"), "100m", nil), "tier", "a"), node: "node-a", wantPass: false},
		{name: "the waiting pod avoids it", promised: avoid(promised.DeepCopy(), "tier", "b"),
			pod: withRequests(testPod("ns", "tier-b"), "100m", map[string]string{"tier": "b"}), node: "node-a", wantPass: false},
		{name: "a node nothing waits for", promised: promised, pod: withRequests(testPod("ns", "elsewhere"), "600m", nil), node: "node-b", wantPass: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := newTestPlugin(t, true, tc.promised, tc.pod)
			p := env.plugin
			p.observePod(t.Context(), tc.promised)
			p.nominate(1, "default-a", []*corev1.Pod{tc.promised})
			nc := &karpv1.NodeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: "default-a"},
				Status:     karpv1.NodeClaimStatus{NodeName: "node-a", ProviderID: "kwok://node-a"},
			}
			if tc.byProviderID {
				nc.Status.NodeName = ""
			}
			p.observeNodeClaim(t.Context(), nc)
			info := framework.NewNodeInfo()
			info.SetNode(&corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: tc.node, Labels: map[string]string{corev1.LabelHostname: tc.node}},
				Spec:       corev1.NodeSpec{ProviderID: "kwok://" + tc.node},
				Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourcePods: resource.MustParse("10"),
				}},
			})
			status := p.Filter(t.Context(), framework.NewCycleState(), tc.pod, info)
			if status.IsSuccess() != tc.wantPass {
				t.Errorf("Filter = %v, want pass %v", status, tc.wantPass)
			}
			if !tc.wantPass && status.Code() != fwk.UnschedulableAndUnresolvable {
				t.Errorf("Filter code %v, want UnschedulableAndUnresolvable (preemption cannot free a promise)", status.Code())
			}
			// The waiting pod itself passes its own node.
			if tc.node == "node-a" && !tc.byProviderID {
				if status := p.Filter(t.Context(), framework.NewCycleState(), tc.promised, info); !status.IsSuccess() {
					t.Errorf("Filter of the waiting pod on its node = %v", status)
				}
			}
		})
	}
}

// TestHoldSurvivesARoundOfRetries: when a pod of a plan is placed, every held pod of the plan
// is retried; the first of them to be rejected again must not take the others, whose retries
// are still queued, for stuck and give up the plan (issue 17: whole plans were released at
// once and planned again). Once each has been rejected since its retry, the plan is stuck.
func TestHoldSurvivesARoundOfRetries(t *testing.T) {
	x, y, placed := testPod("ns", "x"), testPod("ns", "y"), testPod("ns", "placed")
	env := newTestPlugin(t, true, x, y, placed)
	p := env.plugin
	for _, pod := range []*corev1.Pod{x, y, placed} {
		p.observePod(t.Context(), pod)
	}
	p.nominate(1, "default-x", []*corev1.Pod{x})
	p.nominate(1, "default-y", []*corev1.Pod{y})
	p.nominate(1, "default-placed", []*corev1.Pod{placed})
	initialized := []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue}}
	for _, name := range []string{"x", "y"} {
		p.observeNodeClaim(t.Context(), &karpv1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "default-" + name},
			Status:     karpv1.NodeClaimStatus{NodeName: "node-" + name, Conditions: initialized},
		})
	}
	spread := func(node string) fwk.NodeToStatusReader {
		statuses := framework.NewDefaultNodeToStatus()
		statuses.Set(node, fwk.NewStatus(fwk.Unschedulable, "spread").WithPlugin("PodTopologySpread"))
		return statuses
	}
	waits := func(pod *corev1.Pod) bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		_, ok := p.waits.nodeClaimFor(pod.UID)
		return ok
	}
	// Both are held while the third pod of the plan is on its way.
	p.PostFilter(t.Context(), framework.NewCycleState(), x, spread("node-x"))
	p.PostFilter(t.Context(), framework.NewCycleState(), y, spread("node-y"))
	if !waits(x) || !waits(y) {
		t.Fatal("pods were planned again while a pod of their plan was on its way")
	}
	// It is placed: both are retried. x is rejected first; y's retry is still to come.
	p.Reserve(t.Context(), framework.NewCycleState(), placed, "node-placed")
	p.PostFilter(t.Context(), framework.NewCycleState(), x, spread("node-x"))
	if !waits(x) {
		t.Fatal("x gave up its plan while y, retried after the same placement, was still to be tried")
	}
	// y is rejected too: now neither can move the plan on.
	p.PostFilter(t.Context(), framework.NewCycleState(), y, spread("node-y"))
	if waits(y) {
		t.Error("y keeps its pin though every pod of its plan was rejected since the last placement")
	}
}

// TestHoldCountsLaterPlansThatCountedIt: a plan made while a pod of an earlier plan waited
// counted that pod where it was planned; the earlier pod's hold relies on the later plan's
// pods as much as they rely on it.
func TestHoldCountsLaterPlansThatCountedIt(t *testing.T) {
	earlier, later := testPod("ns", "earlier"), testPod("ns", "later")
	env := newTestPlugin(t, true, earlier, later)
	p := env.plugin
	p.observePod(t.Context(), earlier)
	p.observePod(t.Context(), later)
	p.nominate(p.holds.beginPlan(nil), "default-earlier", []*corev1.Pod{earlier})
	p.nominate(p.holds.beginPlan(sets.New(earlier.UID)), "default-later", []*corev1.Pod{later})
	p.observeNodeClaim(t.Context(), &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "default-earlier"},
		Status:     karpv1.NodeClaimStatus{NodeName: "node-earlier", Conditions: []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue}}},
	})
	statuses := framework.NewDefaultNodeToStatus()
	statuses.Set("node-earlier", fwk.NewStatus(fwk.Unschedulable, "spread").WithPlugin("PodTopologySpread"))
	p.PostFilter(t.Context(), framework.NewCycleState(), earlier, statuses)
	if _, waits := p.waits.nodeClaimFor(earlier.UID); !waits || p.pending.has(earlier.UID) {
		t.Fatal("the pod was planned again while a later plan that counted it was still on its way")
	}
	env.activator.reset()
	p.Reserve(t.Context(), framework.NewCycleState(), later, "node-later")
	if err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return slices.Contains(env.activator.keys(), "ns/earlier"), nil
	}); err != nil {
		t.Fatalf("the held pod was not retried when a pod of the later plan was placed: %v", err)
	}
}
