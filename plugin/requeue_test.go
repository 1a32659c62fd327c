package plugin

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	storagevolume "k8s.io/component-helpers/storage/volume"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/apis/karpenter/v1alpha1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/simulation"
)

// windowOpened reports whether a batch window was opened since the last call, and closes it.
func windowOpened(b *Batcher) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	opened := !b.first.IsZero()
	b.first, b.last = time.Time{}, time.Time{}
	select {
	case <-b.opened:
	default:
	}
	return opened
}

// refusedEnv is a plugin whose last plan refused pod "refused" (pending, with a reason), and
// which knows pod "planned" (not refused).
func refusedEnv(t *testing.T, refused ...*corev1.Pod) *testEnv {
	t.Helper()
	env := newTestPlugin(t, true, refused...)
	p := env.plugin
	p.mu.Lock()
	for _, pod := range refused {
		p.refs[pod.UID] = types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
		p.pending.add(pod, "", env.clock.Now())
		p.unschedulable[pod.UID] = `nodepool "default": limits reached`
	}
	p.mu.Unlock()
	windowOpened(p.batcher)
	return env
}

func nodePoolWith(generation int64, ready metav1.ConditionStatus) *karpv1.NodePool {
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default", Generation: generation}}
	if ready != "" {
		np.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeReady, Status: ready}}
	}
	return np
}

// claim is a claim in phase, naming volume; a Bound one carries the PV controller's
// bind-completed annotation, as it does once the controller bound it.
func claim(name, phase, volume string) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: volume},
		Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.PersistentVolumeClaimPhase(phase)},
	}
	if phase == string(corev1.ClaimBound) {
		pvc.Annotations = map[string]string{storagevolume.AnnBindCompleted: "yes"}
	}
	return pvc
}

// pv is a PersistentVolume in phase, reserved for claim ("" for none).
func pv(name, phase, claim string) *corev1.PersistentVolume {
	v := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status:     corev1.PersistentVolumeStatus{Phase: corev1.PersistentVolumePhase(phase)},
	}
	if claim != "" {
		v.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "ns", Name: claim, UID: types.UID("uid-" + claim)}
	}
	return v
}

// TestRefusedPodsReplannedOnTheirCause: each change that can make a pod the last plan
// refused plannable opens a batch window; changes that cannot, do not.
func TestRefusedPodsReplannedOnTheirCause(t *testing.T) {
	pooled := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-a", Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}}}
	stray := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "stray"}}
	poolNode := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}}}
	otherNode := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "m"}}
	overlay := func(generation int64) *v1alpha1.NodeOverlay {
		return &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "o", Generation: generation}}
	}
	cases := []struct {
		name   string
		event  func(p *Plugin, nodeClaims, nodes, nodePools, claims, overlays cache.ResourceEventHandler)
		replan bool
	}{
		{"a NodeClaim of a NodePool deleted", func(_ *Plugin, nc, _, _, _, _ cache.ResourceEventHandler) { nc.OnDelete(pooled) }, true},
		{"a NodeClaim of a NodePool deleted, seen as a tombstone", func(_ *Plugin, nc, _, _, _, _ cache.ResourceEventHandler) {
			nc.OnDelete(cache.DeletedFinalStateUnknown{Key: pooled.Name, Obj: pooled})
		}, true},
		{"a NodeClaim of no NodePool deleted", func(_ *Plugin, nc, _, _, _, _ cache.ResourceEventHandler) { nc.OnDelete(stray) }, false},
		{"a NodeClaim updated", func(_ *Plugin, nc, _, _, _, _ cache.ResourceEventHandler) { nc.OnUpdate(pooled, pooled) }, false},
		{"a Node of a NodePool deleted", func(_ *Plugin, _, n, _, _, _ cache.ResourceEventHandler) { n.OnDelete(poolNode) }, true},
		{"a Node of no NodePool deleted", func(_ *Plugin, _, n, _, _, _ cache.ResourceEventHandler) { n.OnDelete(otherNode) }, false},
		{"a NodePool added", func(_ *Plugin, _, _, np, _, _ cache.ResourceEventHandler) { np.OnAdd(nodePoolWith(1, ""), false) }, true},
		{"a NodePool in the informer's initial list", func(_ *Plugin, _, _, np, _, _ cache.ResourceEventHandler) { np.OnAdd(nodePoolWith(1, ""), true) }, false},
		{"a NodePool's spec changed", func(_ *Plugin, _, _, np, _, _ cache.ResourceEventHandler) {
			np.OnUpdate(nodePoolWith(1, metav1.ConditionTrue), nodePoolWith(2, metav1.ConditionTrue))
		}, true},
		{"a NodePool became Ready", func(_ *Plugin, _, _, np, _, _ cache.ResourceEventHandler) {
			np.OnUpdate(nodePoolWith(1, metav1.ConditionFalse), nodePoolWith(1, metav1.ConditionTrue))
		}, true},
		{"a NodePool's status written, Ready unchanged", func(_ *Plugin, _, _, np, _, _ cache.ResourceEventHandler) {
			np.OnUpdate(nodePoolWith(1, metav1.ConditionTrue), nodePoolWith(1, metav1.ConditionTrue))
		}, false},
		{"a NodePool deleted", func(_ *Plugin, _, _, np, _, _ cache.ResourceEventHandler) { np.OnDelete(nodePoolWith(1, "")) }, false},
		{"the refused pod's claim bound", func(_ *Plugin, _, _, _, c, _ cache.ResourceEventHandler) {
			c.OnUpdate(claim("data", "Pending", ""), claim("data", "Bound", "pv-1"))
		}, true},
		{"the refused pod's pre-bound claim completes its binding", func(_ *Plugin, _, _, _, c, _ cache.ResourceEventHandler) {
			// Created with spec.volumeName; VolumeBinding counts it bound only once the PV
			// controller adds bind-completed.
			c.OnUpdate(claim("data", "Pending", "pv-1"), claim("data", "Bound", "pv-1"))
		}, true},
		{"the refused pod's claim names a volume, binding not completed", func(_ *Plugin, _, _, _, c, _ cache.ResourceEventHandler) {
			c.OnUpdate(claim("data", "Pending", ""), claim("data", "Pending", "pv-1"))
		}, false},
		{"a PersistentVolume created", func(p *Plugin, _, _, _, _, _ cache.ResourceEventHandler) {
			p.volumeHandler(context.Background()).OnAdd(pv("pv-1", "Available", ""), false)
		}, true},
		{"a PersistentVolume in the informer's initial list", func(p *Plugin, _, _, _, _, _ cache.ResourceEventHandler) {
			p.volumeHandler(context.Background()).OnAdd(pv("pv-1", "Available", ""), true)
		}, false},
		{"a PersistentVolume bound", func(p *Plugin, _, _, _, _, _ cache.ResourceEventHandler) {
			p.volumeHandler(context.Background()).OnUpdate(pv("pv-1", "Available", "data"), pv("pv-1", "Bound", "data"))
		}, true},
		{"a PersistentVolume reserved for a claim", func(p *Plugin, _, _, _, _, _ cache.ResourceEventHandler) {
			p.volumeHandler(context.Background()).OnUpdate(pv("pv-1", "Available", ""), pv("pv-1", "Available", "data"))
		}, true},
		{"a PersistentVolume's labels changed", func(p *Plugin, _, _, _, _, _ cache.ResourceEventHandler) {
			p.volumeHandler(context.Background()).OnUpdate(pv("pv-1", "Bound", "data"), pv("pv-1", "Bound", "data"))
		}, false},
		{"the refused pod's claim created", func(_ *Plugin, _, _, _, c, _ cache.ResourceEventHandler) {
			c.OnAdd(claim("data", "Pending", ""), false)
		}, true},
		{"the refused pod's ephemeral claim bound", func(_ *Plugin, _, _, _, c, _ cache.ResourceEventHandler) {
			c.OnUpdate(claim("refused-scratch", "Pending", ""), claim("refused-scratch", "Bound", "pv-2"))
		}, true},
		{"another pod's claim bound", func(_ *Plugin, _, _, _, c, _ cache.ResourceEventHandler) {
			c.OnUpdate(claim("other", "Pending", ""), claim("other", "Bound", "pv-3"))
		}, false},
		{"the refused pod's claim updated, still bound", func(_ *Plugin, _, _, _, c, _ cache.ResourceEventHandler) {
			c.OnUpdate(claim("data", "Bound", "pv-1"), claim("data", "Bound", "pv-1"))
		}, false},
		{"a NodeOverlay added", func(_ *Plugin, _, _, _, _, o cache.ResourceEventHandler) { o.OnAdd(overlay(1), false) }, true},
		{"a NodeOverlay in the informer's initial list", func(_ *Plugin, _, _, _, _, o cache.ResourceEventHandler) { o.OnAdd(overlay(1), true) }, false},
		{"a NodeOverlay's spec changed", func(_ *Plugin, _, _, _, _, o cache.ResourceEventHandler) { o.OnUpdate(overlay(1), overlay(2)) }, true},
		{"a NodeOverlay's status written", func(_ *Plugin, _, _, _, _, o cache.ResourceEventHandler) { o.OnUpdate(overlay(1), overlay(1)) }, false},
		{"a NodeOverlay's devices annotation changed", func(_ *Plugin, _, _, _, _, o cache.ResourceEventHandler) {
			annotated := overlay(1)
			annotated.Annotations = map[string]string{cloudprovider.DevicesAnnotationKey: "[]"}
			o.OnUpdate(overlay(1), annotated)
		}, true},
		{"a NodeOverlay deleted", func(_ *Plugin, _, _, _, _, o cache.ResourceEventHandler) { o.OnDelete(overlay(1)) }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			refused := testPod("ns", "refused")
			refused.Spec.Volumes = []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
			}
			env := refusedEnv(t, refused)
			p := env.plugin
			nc, nodes, pools, claims := p.requeueHandlers(t.Context())
			tc.event(p, nc, nodes, pools, claims, p.overlayHandler(t.Context()))
			if got := windowOpened(p.batcher); got != tc.replan {
				t.Errorf("batch window opened: %v, want %v", got, tc.replan)
			}
		})
	}
}

// TestReplanRefusedNeedsARefusedPod: with no refused pod pending (none refused, or the
// refused one quarantined, or it left the pending set), a change opens no batch window.
func TestReplanRefusedNeedsARefusedPod(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(p *Plugin, pod *corev1.Pod)
		replan bool
	}{
		{"refused and pending", func(*Plugin, *corev1.Pod) {}, true},
		{"quarantined", func(p *Plugin, pod *corev1.Pod) { p.quarantined[pod.UID] = time.Now().Add(time.Hour) }, false},
		{"no longer pending", func(p *Plugin, pod *corev1.Pod) { p.pending.remove(pod.UID) }, false},
		{"not refused", func(p *Plugin, pod *corev1.Pod) { delete(p.unschedulable, pod.UID) }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod("ns", "refused")
			env := refusedEnv(t, pod)
			p := env.plugin
			p.mu.Lock()
			tc.setup(p, pod)
			p.mu.Unlock()
			p.replanRefused(t.Context(), "test", nil)
			if got := windowOpened(p.batcher); got != tc.replan {
				t.Errorf("batch window opened: %v, want %v", got, tc.replan)
			}
		})
	}
}

// skippingPlanner is a planner that skipped offerings until a given time.
type skippingPlanner struct {
	plannerFunc
	until time.Time
}

func (s *skippingPlanner) SkippedUntil() (time.Time, bool) { return s.until, !s.until.IsZero() }

// TestRefusedPodsReplannedWhenAnOfferingReturns: a batch that refused pods arms one timer for
// the earliest unavailable offering its plan skipped; a later batch skipping a later offering
// keeps it, an earlier one moves it, and it plans the refused pods when it fires. A batch that
// refused nothing arms none.
func TestRefusedPodsReplannedWhenAnOfferingReturns(t *testing.T) {
	pod := testPod("ns", "refused")
	env := refusedEnv(t, pod)
	p := env.plugin
	planner := &skippingPlanner{plannerFunc: func(context.Context, []*corev1.Pod) (*simulation.Plan, error) { return &simulation.Plan{}, nil }}
	p.planner = planner
	start := env.clock.Now()

	planner.until = start.Add(time.Minute)
	p.replanWhenOfferingsReturn(0)
	if env.clock.HasWaiters() {
		t.Fatal("a batch that refused nothing armed the timer")
	}
	p.replanWhenOfferingsReturn(1)
	planner.until = start.Add(3 * time.Minute)
	p.replanWhenOfferingsReturn(1) // a later offering: the earlier timer stays
	env.clock.Step(time.Minute - time.Second)
	if windowOpened(p.batcher) {
		t.Fatal("planned before the offering returned")
	}
	env.clock.Step(time.Second)
	awaitWindow(t, p.batcher, "the offering returned and the refused pod was not planned again")

	planner.until = start.Add(10 * time.Minute)
	p.replanWhenOfferingsReturn(1)
	planner.until = start.Add(5 * time.Minute)
	p.replanWhenOfferingsReturn(1) // an earlier offering: the timer moves
	env.clock.SetTime(start.Add(5 * time.Minute))
	awaitWindow(t, p.batcher, "the earlier offering returned and the refused pod was not planned again")
	if env.clock.HasWaiters() {
		t.Error("the replaced timer is still armed")
	}
}

// awaitWindow waits for a batch window to open (the offering timer triggers off the clock's
// goroutine), failing with msg.
func awaitWindow(t *testing.T, b *Batcher, msg string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return windowOpened(b), nil
	})
	if err != nil {
		t.Fatal(msg)
	}
}

// announcingPlanner is a planner whose cloud provider announces returning offerings.
type announcingPlanner struct {
	plannerFunc
	subscribers []func(string)
}

func (a *announcingPlanner) OnOfferingsReturn(fn func(string)) {
	a.subscribers = append(a.subscribers, fn)
}

// TestRefusedPodsReplannedWhenOfferingsAnnounced: when the cloud provider announces offerings
// available again (a zonal shift ended), the refused pods are planned again; a planner without
// an announcer gets no subscription.
func TestRefusedPodsReplannedWhenOfferingsAnnounced(t *testing.T) {
	pod := testPod("ns", "refused")
	env := refusedEnv(t, pod)
	p := env.plugin
	planner := &announcingPlanner{plannerFunc: func(context.Context, []*corev1.Pod) (*simulation.Plan, error) { return &simulation.Plan{}, nil }}
	p.planner = planner
	p.replanWhenOfferingsAnnounced()
	if len(planner.subscribers) != 1 {
		t.Fatalf("%d subscriptions, want 1", len(planner.subscribers))
	}
	if windowOpened(p.batcher) {
		t.Fatal("planned before any announcement")
	}
	planner.subscribers[0]("zonal shift away from usw2-az1 ended")
	awaitWindow(t, p.batcher, "the offerings returned and the refused pod was not planned again")
}
