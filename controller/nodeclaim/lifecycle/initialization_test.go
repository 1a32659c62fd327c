package lifecycle

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

func TestNotInitializedBecause(t *testing.T) {
	ready := []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	startup := corev1.Taint{Key: "example.com/agent", Effect: corev1.TaintEffectNoSchedule}
	tests := []struct {
		name        string
		conditions  []corev1.NodeCondition
		taints      []corev1.Taint
		allocatable corev1.ResourceList
		wantReason  string
	}{
		{name: "no Ready condition", wantReason: reasonNodeNotReady},
		{name: "not ready", conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}, wantReason: reasonNodeNotReady},
		{name: "startup taint", conditions: ready, taints: []corev1.Taint{startup}, wantReason: reasonStartupTaints},
		{name: "ephemeral taint", conditions: ready, taints: []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}, wantReason: reasonEphemeralTaints},
		{name: "gpu missing", conditions: ready, wantReason: reasonResourceMissing},
		{name: "gpu zero", conditions: ready, allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("0")}, wantReason: reasonResourceMissing},
		{name: "initialized", conditions: ready, allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}},
		{
			name: "other taints do not matter", conditions: ready, allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")},
			taints: []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}, {Key: startup.Key, Effect: corev1.TaintEffectNoExecute}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc := &karpv1.NodeClaim{}
			nc.Spec.StartupTaints = []corev1.Taint{startup}
			// cpu and pods are always reported; only the extended resource is checked.
			nc.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), "nvidia.com/gpu": resource.MustParse("1")}
			node := &corev1.Node{Spec: corev1.NodeSpec{Taints: tt.taints}, Status: corev1.NodeStatus{Conditions: tt.conditions, Allocatable: tt.allocatable}}
			if reason, message := notInitializedBecause(nc, node); reason != tt.wantReason {
				t.Errorf("notInitializedBecause() = %q (%s), want %q", reason, message, tt.wantReason)
			}
		})
	}
}

func TestIsExtendedResource(t *testing.T) {
	for name, want := range map[corev1.ResourceName]bool{
		corev1.ResourceCPU: false, corev1.ResourceMemory: false, corev1.ResourcePods: false, corev1.ResourceEphemeralStorage: false,
		"hugepages-2Mi": false, "kubernetes.io/something": false, "nvidia.com/gpu": true, "vpc.amazonaws.com/pod-eni": true,
	} {
		if got := isExtendedResource(name); got != want {
			t.Errorf("isExtendedResource(%s) = %v, want %v", name, got, want)
		}
	}
}
