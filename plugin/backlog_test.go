package plugin

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestFirstBatchWaitsForTheBacklog (issues 17 and 26, TestWavesAcrossALeaderChange): a process
// that starts to lead holds its first batch until kube-scheduler has tried every pod it found
// waiting — pending after its PostFilter, bound, or gone — so the backlog is planned as one
// batch, not in the fragments the queue's pace would cut it into. The backlog is both the pods
// the previous leader left Unschedulable and those it never reached (no PodScheduled
// condition): a leader killed mid-burst leaves both. Gated pods are not waited for.
func TestFirstBatchWaitsForTheBacklog(t *testing.T) {
	left := func(name string) *corev1.Pod {
		pod := testPod("ns", name)
		pod.Status.Conditions = []corev1.PodCondition{unschedulableCondition("0/3 nodes are available: 3 Insufficient cpu.")}
		return pod
	}
	a, b, c := left("a"), left("b"), left("c")
	fresh := testPod("ns", "fresh")
	gated := testPod("ns", "gated")
	gated.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/hold"}}
	env := newTestPlugin(t, true, a, b, c, fresh, gated)
	p := env.plugin

	done := make(chan struct{})
	go func() { defer close(done); p.awaitBacklog(t.Context()) }()
	stillWaiting := func(what string) {
		t.Helper()
		select {
		case <-done:
			t.Fatalf("the first batch stopped waiting %s", what)
		case <-time.After(200 * time.Millisecond):
		}
	}
	stillWaiting("before any backlog pod was tried")
	postFilterMessage(t, p, a)
	bound := b.DeepCopy()
	bound.Spec.NodeName = "node-1"
	if err := env.pods.Update(bound); err != nil {
		t.Fatal(err)
	}
	stillWaiting("with two backlog pods untried")
	if err := env.pods.Delete(c); err != nil {
		t.Fatal(err)
	}
	stillWaiting("with a pod the previous leader never reached still untried")
	postFilterMessage(t, p, fresh)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the first batch still waits once every backlog pod but the gated one was tried")
	}
	for _, pod := range []*corev1.Pod{a, fresh} {
		if !p.pending.has(pod.UID) {
			t.Errorf("the tried pod %s left the pending set", pod.Name)
		}
	}
}
