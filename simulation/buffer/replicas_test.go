package buffer

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	autoscalingv1alpha1 "github.com/joinery-dev/joinery/apis/autoscaling/v1alpha1"
)

func i32(v int32) *int32 { return &v }

func list(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

func TestReplicas(t *testing.T) {
	chunk := list("cpu", "500m", "memory", "1Gi")
	cases := []struct {
		name     string
		spec     autoscalingv1alpha1.CapacityBufferSpec
		workload *int32
		chunk    corev1.ResourceList
		want     int32
		wantErr  string
	}{
		{name: "replicas", spec: autoscalingv1alpha1.CapacityBufferSpec{Replicas: i32(5)}, want: 5},
		{name: "zero replicas", spec: autoscalingv1alpha1.CapacityBufferSpec{Replicas: i32(0)}, want: 0},
		{name: "percentage exact", spec: autoscalingv1alpha1.CapacityBufferSpec{Percentage: i32(50)}, workload: i32(10), want: 5},
		{name: "percentage rounds up", spec: autoscalingv1alpha1.CapacityBufferSpec{Percentage: i32(20)}, workload: i32(7), want: 2},
		{name: "percentage at least one", spec: autoscalingv1alpha1.CapacityBufferSpec{Percentage: i32(1)}, workload: i32(3), want: 1},
		{name: "percentage of a workload scaled to zero", spec: autoscalingv1alpha1.CapacityBufferSpec{Percentage: i32(50)}, workload: i32(0), want: 1},
		{name: "zero percentage", spec: autoscalingv1alpha1.CapacityBufferSpec{Percentage: i32(0)}, workload: i32(10), want: 0},
		{name: "percentage above 100", spec: autoscalingv1alpha1.CapacityBufferSpec{Percentage: i32(150)}, workload: i32(3), want: 5},
		{name: "replicas smaller than percentage", spec: autoscalingv1alpha1.CapacityBufferSpec{Replicas: i32(2), Percentage: i32(50)}, workload: i32(10), want: 2},
		{name: "percentage smaller than replicas", spec: autoscalingv1alpha1.CapacityBufferSpec{Replicas: i32(8), Percentage: i32(30)}, workload: i32(10), want: 3},
		{name: "limits alone: cpu binds", spec: autoscalingv1alpha1.CapacityBufferSpec{Limits: list("cpu", "2", "memory", "10Gi")}, chunk: chunk, want: 4},
		{name: "limits alone: memory binds", spec: autoscalingv1alpha1.CapacityBufferSpec{Limits: list("cpu", "20", "memory", "3Gi")}, chunk: chunk, want: 3},
		{name: "limits alone: partial chunk rounds down", spec: autoscalingv1alpha1.CapacityBufferSpec{Limits: list("cpu", "1700m")}, chunk: chunk, want: 3},
		{name: "limits alone: smaller than a chunk", spec: autoscalingv1alpha1.CapacityBufferSpec{Limits: list("cpu", "100m")}, chunk: chunk, want: 0},
		{name: "limits alone: an unrequested resource is ignored", spec: autoscalingv1alpha1.CapacityBufferSpec{Limits: list("cpu", "1", "nvidia.com/gpu", "1")}, chunk: chunk, want: 2},
		{name: "limits alone: nothing requested is limited", spec: autoscalingv1alpha1.CapacityBufferSpec{Limits: list("nvidia.com/gpu", "4")}, chunk: chunk, wantErr: "spec.limits: the pod template requests none of the limited resources (nvidia.com/gpu), so limits cannot size the buffer"},
		{name: "limits cap replicas", spec: autoscalingv1alpha1.CapacityBufferSpec{Replicas: i32(10), Limits: list("cpu", "2")}, chunk: chunk, want: 4},
		{name: "replicas under limits", spec: autoscalingv1alpha1.CapacityBufferSpec{Replicas: i32(3), Limits: list("cpu", "2")}, chunk: chunk, want: 3},
		{name: "limits cap percentage", spec: autoscalingv1alpha1.CapacityBufferSpec{Percentage: i32(100), Limits: list("memory", "2Gi")}, workload: i32(6), chunk: chunk, want: 2},
		{name: "limits cap replicas and percentage", spec: autoscalingv1alpha1.CapacityBufferSpec{Replicas: i32(9), Percentage: i32(80), Limits: list("cpu", "3")}, workload: i32(10), chunk: chunk, want: 6},
		{name: "replicas with limits on unrequested resources", spec: autoscalingv1alpha1.CapacityBufferSpec{Replicas: i32(3), Limits: list("nvidia.com/gpu", "1")}, chunk: chunk, want: 3},
		{name: "nothing set", spec: autoscalingv1alpha1.CapacityBufferSpec{}, workload: i32(3), wantErr: "spec: one of replicas, percentage or limits must be set"},
		{name: "percentage without a workload", spec: autoscalingv1alpha1.CapacityBufferSpec{Percentage: i32(10), Replicas: i32(1)}, wantErr: "spec.percentage: only applicable when scalableRef is set"},
		{name: "negative replicas", spec: autoscalingv1alpha1.CapacityBufferSpec{Replicas: i32(-1)}, wantErr: "spec.replicas: -1 is negative"},
		{name: "negative percentage", spec: autoscalingv1alpha1.CapacityBufferSpec{Percentage: i32(-5)}, workload: i32(3), wantErr: "spec.percentage: -5 is negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Replicas(&tc.spec, tc.workload, tc.chunk)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr || !IsSizeError(err) {
					t.Fatalf("Replicas() = %d, %v; want error %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Replicas() = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}
