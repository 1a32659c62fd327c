package plugin

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestFirstBatchWaitsForTheBacklog (issue 17, TestWavesAcrossALeaderChange): a process that
// starts to lead holds its first batch until kube-scheduler has tried every pod the previous
// leader left Unschedulable — pending after its PostFilter, bound, or gone — so the backlog
// is planned as one batch, not in the fragments the queue's pace would cut it into. Pods never
// tried (no Unschedulable condition) are not waited for.
func TestFirstBatchWaitsForTheBacklog(t *testing.T) {
	left := func(name string) *corev1.Pod {
		pod := testPod("ns", name)
		pod.Status.Conditions = []corev1.PodCondition{unschedulableCondition("0/3 nodes are available: 3 Insufficient cpu.")}
		return pod
	}
	a, b, c := left("a"), left("b"), left("c")
	fresh := testPod("ns", "fresh")
	env := newTestPlugin(t, true, a, b, c, fresh)
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
	stillWaiting("with one backlog pod untried")
	if err := env.pods.Delete(c); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the first batch still waits once every backlog pod was tried")
	}
	if !p.pending.has(a.UID) {
		t.Error("the tried pod left the pending set")
	}
}
