package eventlimit

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
)

func pod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)}}
}

// TestStuckPodDoesNotFlood: a pod that fails scheduling every batch for an hour (a batch every
// 10 s, the message changing with the batch's size) records its burst and then one event a
// minute; identical events within the window are dropped; other pods are not held back.
func TestStuckPodDoesNotFlood(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	fake := events.NewFakeRecorder(10000)
	r := New(fake, Options{Clock: clk})
	stuck := pod("stuck")
	for i := range 360 {
		r.Eventf(stuck, nil, corev1.EventTypeWarning, "FailedScheduling", "Provision", "Failed to schedule pod, %d pods in the batch", i%7)
		clk.Step(10 * time.Second)
	}
	got := len(fake.Events)
	// Burst 5, then one per minute over the hour: about 65.
	if got < 60 || got > 66 {
		t.Errorf("a stuck pod recorded %d events in an hour of 360 retries, want ~65", got)
	}
	drain(fake)

	tests := []struct {
		name    string
		step    time.Duration
		obj     *corev1.Pod
		message string
		want    bool
	}{
		{"first", 0, pod("a"), "m", true},
		{"identical at once", time.Second, pod("a"), "m", false},
		{"different message", 0, pod("a"), "n", true},
		{"another pod", 0, pod("b"), "m", true},
		{"identical after the window", DedupeWindow + time.Second, pod("a"), "m", true},
	}
	for _, tt := range tests {
		clk.Step(tt.step)
		r.Eventf(tt.obj, nil, corev1.EventTypeNormal, "Nominated", "Nominate", "%s", tt.message)
		if recorded := len(fake.Events) == 1; recorded != tt.want {
			t.Errorf("%s: recorded %v, want %v", tt.name, recorded, tt.want)
		}
		drain(fake)
	}
}

func drain(f *events.FakeRecorder) {
	for len(f.Events) > 0 {
		<-f.Events
	}
}
