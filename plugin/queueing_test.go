package plugin

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
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

func TestNodeClaimHint(t *testing.T) {
	pod := testPod("ns", "p")
	planned := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-a"}}
	simulation.AddPlannedPods(planned, pod.UID)
	other := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-b"}}
	simulation.AddPlannedPods(other, "someone-else")
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(planned)
	if err != nil {
		t.Fatal(err)
	}
	asUnstructured := &unstructured.Unstructured{Object: content}

	cases := []struct {
		name     string
		old, new any
		want     fwk.QueueingHint
	}{
		{"planned NodeClaim changed (unstructured)", asUnstructured, asUnstructured, fwk.Queue},
		{"planned NodeClaim deleted", planned, nil, fwk.Queue},
		{"another NodeClaim", nil, other, fwk.QueueSkip},
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
