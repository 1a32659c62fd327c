package plugin

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/simulation"
)

func TestEventsToRegister(t *testing.T) {
	events, err := (&Plugin{}).EventsToRegister(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var resources []fwk.EventResource
	for _, e := range events {
		resources = append(resources, e.Event.Resource)
		if e.QueueingHintFn == nil {
			t.Errorf("%s has no queueing hint", e.Event.Label())
		}
	}
	if len(resources) != 2 || resources[0] != fwk.Node || resources[1] != "nodeclaims.v1.karpenter.sh" {
		t.Errorf("resources %v, want Node and nodeclaims.v1.karpenter.sh", resources)
	}
}

func TestNodeHint(t *testing.T) {
	node := func(labelled, cordoned, unregistered bool) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{}}}
		if labelled {
			n.Labels[karpv1.NodePoolLabelKey] = "default"
		}
		n.Spec.Unschedulable = cordoned
		if unregistered {
			n.Spec.Taints = []corev1.Taint{{Key: karpv1.UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}}
		}
		return n
	}
	cases := []struct {
		name     string
		old, new *corev1.Node
		want     fwk.QueueingHint
	}{
		{"joinery node added", nil, node(true, false, false), fwk.Queue},
		{"other node added", nil, node(false, false, false), fwk.QueueSkip},
		{"added still unregistered", nil, node(true, false, true), fwk.QueueSkip},
		{"unregistered taint lifted", node(true, false, true), node(true, false, false), fwk.Queue},
		{"uncordoned", node(true, true, false), node(true, false, false), fwk.Queue},
		{"nodepool label added", node(false, false, false), node(true, false, false), fwk.Queue},
		{"already schedulable", node(true, false, false), node(true, false, false), fwk.QueueSkip},
		{"cordoned", node(true, false, false), node(true, true, false), fwk.QueueSkip},
	}
	for _, tc := range cases {
		var old any
		if tc.old != nil {
			old = tc.old
		}
		got, err := isJoineryNodeNowSchedulable(klog.Background(), testPod("ns", "p"), old, tc.new)
		if err != nil || got != tc.want {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}

// TestNodeHintForAWaitingPod: a pod that waits for a NodeClaim is requeued by its own node
// only, not by every joinery node of a scale-up.
func TestNodeHintForAWaitingPod(t *testing.T) {
	waiting, free := testPod("ns", "waiting"), testPod("ns", "free")
	env := newTestPlugin(t, true, waiting, free)
	p := env.plugin
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-a"}}
	nc.Status.NodeName = "node-a"
	p.launches.observe(nc)
	p.mu.Lock()
	p.waits.assign("default-a", waiting.UID)
	p.mu.Unlock()
	unknown := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-b"}}
	p.launches.observe(unknown)
	waitingUnknown := testPod("ns", "waiting-unknown")
	p.mu.Lock()
	p.waits.assign("default-b", waitingUnknown.UID)
	p.mu.Unlock()

	node := func(name string, unregistered bool) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}}}
		if unregistered {
			n.Spec.Taints = []corev1.Taint{{Key: karpv1.UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}}
		}
		return n
	}
	cases := []struct {
		name     string
		pod      *corev1.Pod
		old, new *corev1.Node
		want     fwk.QueueingHint
	}{
		{"its own node became schedulable", waiting, node("node-a", true), node("node-a", false), fwk.Queue},
		{"its own node added", waiting, nil, node("node-a", false), fwk.Queue},
		{"another node became schedulable", waiting, node("node-x", true), node("node-x", false), fwk.QueueSkip},
		{"its NodeClaim has no node yet", waitingUnknown, nil, node("node-x", false), fwk.QueueSkip},
		{"its own node still unregistered", waiting, nil, node("node-a", true), fwk.QueueSkip},
		{"a pod that waits for nothing", free, nil, node("node-x", false), fwk.Queue},
	}
	for _, tc := range cases {
		var old any
		if tc.old != nil {
			old = tc.old
		}
		got, err := p.isNodeNowSchedulableFor(klog.Background(), tc.pod, old, tc.new)
		if err != nil || got != tc.want {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}

func TestNodeClaimHint(t *testing.T) {
	pod := testPod("ns", "p")
	planned := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-a"}}
	simulation.AddPlannedPods(planned, pod.UID)
	other := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-b"}}
	simulation.AddPlannedPods(other, "someone-else")
	toUnstructured := func(nc *karpv1.NodeClaim) *unstructured.Unstructured {
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(nc)
		if err != nil {
			t.Fatal(err)
		}
		return &unstructured.Unstructured{Object: content}
	}
	with := func(change func(nc *karpv1.NodeClaim)) *karpv1.NodeClaim {
		nc := planned.DeepCopy()
		change(nc)
		return nc
	}
	launched := with(func(nc *karpv1.NodeClaim) {
		nc.Status.ProviderID = "kwok://a"
		nc.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionTrue}}
	})
	registered := with(func(nc *karpv1.NodeClaim) { nc.Status.NodeName = "node-a" })
	initialized := with(func(nc *karpv1.NodeClaim) {
		nc.Status.NodeName = "node-a"
		nc.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue}}
	})
	initializedHeartbeat := with(func(nc *karpv1.NodeClaim) {
		nc.Status.NodeName = "node-a"
		nc.Status.Conditions = []metav1.Condition{
			{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue},
			{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionTrue},
		}
	})
	deleting := with(func(nc *karpv1.NodeClaim) { nc.DeletionTimestamp = &metav1.Time{} })
	unplanned := with(func(nc *karpv1.NodeClaim) { nc.Annotations = nil })

	cases := []struct {
		name     string
		old, new any
		want     fwk.QueueingHint
	}{
		{"planned NodeClaim added", nil, planned, fwk.Queue},
		{"planned NodeClaim deleted", planned, nil, fwk.Queue},
		{"planned NodeClaim deleted (tombstone)", cache.DeletedFinalStateUnknown{Obj: planned}, nil, fwk.Queue},
		{"another NodeClaim", nil, other, fwk.QueueSkip},
		{"another NodeClaim changed", other, other, fwk.QueueSkip},
		{"unchanged (unstructured)", toUnstructured(planned), toUnstructured(planned), fwk.QueueSkip},
		{"launched: status only", planned, launched, fwk.QueueSkip},
		{"other conditions of an initialized NodeClaim", initialized, initializedHeartbeat, fwk.QueueSkip},
		{"registered (unstructured)", toUnstructured(launched), toUnstructured(registered), fwk.Queue},
		{"initialized", registered, initialized, fwk.Queue},
		{"deleting", planned, deleting, fwk.Queue},
		{"pod planned onto it", unplanned, planned, fwk.Queue},
		{"pod no longer planned onto it", planned, unplanned, fwk.Queue},
	}
	for _, tc := range cases {
		got, err := isNodeClaimPlannedFor(klog.Background(), pod, tc.old, tc.new)
		if err != nil || got != tc.want {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	if _, err := isNodeClaimPlannedFor(klog.Background(), pod, nil, "not a NodeClaim"); err == nil {
		t.Error("no error for an object that is not a NodeClaim")
	}
}
