package scheduling

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestPodPredicates(t *testing.T) {
	owned := func(kind string, controller bool) []metav1.OwnerReference {
		return []metav1.OwnerReference{{Kind: kind, Name: "x", Controller: ptr.To(controller)}}
	}
	tests := []struct {
		name                        string
		pod                         corev1.Pod
		finished, daemonSet, mirror bool
	}{
		{name: "running", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}},
		{name: "pending", pod: corev1.Pod{}},
		{name: "succeeded", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, finished: true},
		{name: "failed", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed}}, finished: true},
		{name: "controlled by a DaemonSet", pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: owned("DaemonSet", true)}}, daemonSet: true},
		{name: "a DaemonSet owns but does not control it", pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: owned("DaemonSet", false)}}},
		{name: "controlled by a ReplicaSet", pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: owned("ReplicaSet", true)}}},
		{name: "a static pod's mirror", pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "x"}}}, mirror: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PodFinished(&tt.pod); got != tt.finished {
				t.Errorf("PodFinished = %v, want %v", got, tt.finished)
			}
			if got := PodOwnedByDaemonSet(&tt.pod); got != tt.daemonSet {
				t.Errorf("PodOwnedByDaemonSet = %v, want %v", got, tt.daemonSet)
			}
			if got := PodIsMirror(&tt.pod); got != tt.mirror {
				t.Errorf("PodIsMirror = %v, want %v", got, tt.mirror)
			}
		})
	}
}
