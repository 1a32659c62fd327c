package framework

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRequestedShares(t *testing.T) {
	node := func(name, cpu, memory string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory),
		}}}
	}
	pod := func(node, cpu, memory string, phase corev1.PodPhase) corev1.Pod {
		return corev1.Pod{
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory),
			}}}}},
			Status: corev1.PodStatus{Phase: phase},
		}
	}
	got := RequestedShares(
		[]corev1.Node{node("cpu-bound", "4", "16Gi"), node("memory-bound", "4", "16Gi"), node("idle", "4", "16Gi"), {ObjectMeta: metav1.ObjectMeta{Name: "unknown"}}},
		[]corev1.Pod{
			pod("cpu-bound", "2", "1Gi", corev1.PodRunning), pod("cpu-bound", "1", "1Gi", corev1.PodRunning),
			pod("memory-bound", "100m", "12Gi", corev1.PodRunning),
			pod("idle", "4", "16Gi", corev1.PodSucceeded), pod("", "4", "16Gi", corev1.PodPending),
		})
	want := map[string]float64{"cpu-bound": 0.75, "memory-bound": 0.75, "idle": 0}
	if len(got) != len(want) {
		t.Fatalf("shares %v, want %v", got, want)
	}
	for name, share := range want {
		if got[name] != share {
			t.Errorf("shares %v, want %v", got, want)
		}
	}
}
