package plugin

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
)

// TestPodTimes follows one pod from being seen, through its batch and plan, to its binding and
// start: each step observes its duration from the right starting point, and the waiting
// gauges go once the pod runs.
func TestPodTimes(t *testing.T) {
	RegisterMetrics()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"}}
	times := newPodTimes()
	count := func(h *metrics.Histogram) uint64 {
		t.Helper()
		n, err := testutil.GetHistogramMetricCount(h.ObserverMetric)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	sum := func(h *metrics.Histogram) float64 {
		t.Helper()
		v, err := testutil.GetHistogramMetricValue(h.ObserverMetric)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	decisions, bound, started := count(podSchedulingDecision), count(podProvisioningBound), count(podProvisioningStartup)
	decisionSum, boundSum, startSum := sum(podSchedulingDecision), sum(podProvisioningBound), sum(podProvisioningStartup)

	times.seen(pod, t0)
	times.refresh(t0.Add(2 * time.Second))
	series := map[string]string{"name": "web", "namespace": "default"}
	if v, _ := testutil.GetGaugeMetricValue(podUndecided.With(series)); v != 2 {
		t.Errorf("undecided time = %v, want 2", v)
	}
	times.tried([]*corev1.Pod{pod}, t0.Add(3*time.Second))
	times.tried([]*corev1.Pod{pod}, t0.Add(30*time.Second)) // a second batch is not a first try
	times.decided([]types.UID{pod.UID}, t0.Add(4*time.Second))
	times.refresh(t0.Add(10 * time.Second))
	if v, _ := testutil.GetGaugeMetricValue(podProvisioningUnbound.With(series)); v != 6 {
		t.Errorf("provisioning unbound time = %v, want 6", v)
	}

	boundPod := pod.DeepCopy()
	boundPod.Spec.NodeName = "n1"
	boundPod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(14 * time.Second))}}
	times.observe(boundPod)
	readyPod := boundPod.DeepCopy()
	readyPod.Status.Conditions = append(readyPod.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(24 * time.Second))})
	times.observe(readyPod)

	tests := []struct {
		name      string
		h         *metrics.Histogram
		count0    uint64
		sum0, sum float64
	}{
		{"scheduling decision: seen to first try", podSchedulingDecision, decisions, decisionSum, 3},
		{"provisioning bound: decided to bound", podProvisioningBound, bound, boundSum, 10},
		{"provisioning startup: decided to ready", podProvisioningStartup, started, startSum, 20},
	}
	for _, tt := range tests {
		if got := count(tt.h) - tt.count0; got != 1 {
			t.Errorf("%s: %d observations, want 1", tt.name, got)
		}
		if got := sum(tt.h) - tt.sum0; got != tt.sum {
			t.Errorf("%s: observed %v, want %v", tt.name, got, tt.sum)
		}
	}
	if len(times.pods) != 0 {
		t.Errorf("a running pod is still followed: %v", times.pods)
	}
}
