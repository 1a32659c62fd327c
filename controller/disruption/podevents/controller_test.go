package podevents

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func pod(name string, scheduledAt time.Time, mutate ...func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: metav1.NewTime(scheduledAt.Add(-time.Second))},
		Spec:       corev1.PodSpec{NodeName: "node-a"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(scheduledAt)},
		}},
	}
	for _, m := range mutate {
		m(&p)
	}
	return p
}

func daemonPod(p *corev1.Pod) {
	p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds", Controller: ptr.To(true)}}
}

func TestUpdate(t *testing.T) {
	after := func(d time.Duration) *karpv1.NodePool {
		np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
		np.Spec.Disruption.ConsolidateAfter = karpv1.DurationOf(d)
		return np
	}
	never := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	never.Spec.Disruption.ConsolidateAfter = karpv1.NeverDuration()
	tests := []struct {
		name             string
		np               *karpv1.NodePool
		lastEvent        time.Time
		pods             []corev1.Pod
		removed          time.Time
		now              time.Time
		wantLast         time.Time
		wantEmpty        bool
		wantConsolidable bool
		wantRequeue      time.Duration
	}{
		{name: "empty node past consolidateAfter since initialization", np: after(30 * time.Second), now: t0.Add(time.Minute),
			wantEmpty: true, wantConsolidable: true},
		{name: "only DaemonSet and finished pods: empty", np: after(0), now: t0.Add(time.Minute),
			pods:     []corev1.Pod{pod("ds", t0.Add(5*time.Second), daemonPod), pod("job", t0.Add(10*time.Second), func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })},
			wantLast: t0.Add(10 * time.Second), wantEmpty: true, wantConsolidable: true},
		{name: "a pod bound recently restarts the countdown", np: after(30 * time.Second), now: t0.Add(40 * time.Second),
			pods: []corev1.Pod{pod("web", t0.Add(20*time.Second))}, wantLast: t0.Add(20 * time.Second), wantRequeue: 10 * time.Second},
		{name: "a pod removal restarts the countdown", np: after(30 * time.Second), now: t0.Add(40 * time.Second), removed: t0.Add(35 * time.Second),
			wantLast: t0.Add(35 * time.Second), wantEmpty: true, wantRequeue: 25 * time.Second},
		{name: "an older binding does not move the time back", np: after(30 * time.Second), lastEvent: t0.Add(time.Minute), now: t0.Add(2 * time.Minute),
			pods: []corev1.Pod{pod("web", t0.Add(10*time.Second))}, wantLast: t0.Add(time.Minute), wantConsolidable: true},
		{name: "consolidateAfter Never: never consolidatable", np: never, now: t0.Add(time.Hour), wantEmpty: true},
		{name: "standalone NodeClaim: never consolidatable", np: nil, now: t0.Add(time.Hour), wantEmpty: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc := &karpv1.NodeClaim{Status: karpv1.NodeClaimStatus{NodeName: "node-a", LastPodEventTime: metav1.NewTime(tt.lastEvent), Conditions: []metav1.Condition{
				{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)},
			}}}
			requeue := Update(nc, tt.np, tt.pods, tt.removed, tt.now)
			if !nc.Status.LastPodEventTime.Time.Equal(tt.wantLast) {
				t.Errorf("lastPodEventTime = %s, want %s", nc.Status.LastPodEventTime.Time, tt.wantLast)
			}
			if got := meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeEmpty); got != tt.wantEmpty {
				t.Errorf("Empty = %t, want %t", got, tt.wantEmpty)
			}
			if got := meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeConsolidatable); got != tt.wantConsolidable {
				t.Errorf("Consolidatable = %t, want %t", got, tt.wantConsolidable)
			}
			if requeue != tt.wantRequeue {
				t.Errorf("requeue = %s, want %s", requeue, tt.wantRequeue)
			}
		})
	}
}
