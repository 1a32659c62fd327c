package scheduling

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func resources(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

func container(requests corev1.ResourceList) corev1.Container {
	return corev1.Container{Resources: corev1.ResourceRequirements{Requests: requests}}
}

func sidecar(requests corev1.ResourceList) corev1.Container {
	always := corev1.ContainerRestartPolicyAlways
	c := container(requests)
	c.RestartPolicy = &always
	return c
}

func equalResources(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name := range a {
		if Cmp(a, b, name) != 0 {
			return false
		}
	}
	return true
}

func TestPodRequests(t *testing.T) {
	tests := []struct {
		name string
		spec corev1.PodSpec
		want corev1.ResourceList
	}{
		{
			name: "containers add up",
			spec: corev1.PodSpec{Containers: []corev1.Container{
				container(resources("cpu", "1", "memory", "1Gi")),
				container(resources("cpu", "500m")),
			}},
			want: resources("cpu", "1500m", "memory", "1Gi"),
		},
		{
			name: "an init container larger than the containers sets the peak",
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{container(resources("cpu", "4")), container(resources("cpu", "2", "memory", "8Gi"))},
				Containers:     []corev1.Container{container(resources("cpu", "1", "memory", "1Gi"))},
			},
			want: resources("cpu", "4", "memory", "8Gi"),
		},
		{
			// The sidecar keeps running: it adds to the containers and to every later init container.
			name: "restartable sidecars count alongside containers and later init containers",
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{
					sidecar(resources("cpu", "500m", "memory", "256Mi")),
					container(resources("cpu", "2")),
				},
				Containers: []corev1.Container{container(resources("cpu", "1", "memory", "1Gi"))},
			},
			want: resources("cpu", "2500m", "memory", "1280Mi"),
		},
		{
			name: "pod overhead is added",
			spec: corev1.PodSpec{
				Containers: []corev1.Container{container(resources("cpu", "1"))},
				Overhead:   resources("cpu", "250m", "memory", "120Mi"),
			},
			want: resources("cpu", "1250m", "memory", "120Mi"),
		},
		{
			name: "pod-level requests replace the containers' sum, overhead still added",
			spec: corev1.PodSpec{
				Resources:  &corev1.ResourceRequirements{Requests: resources("cpu", "3", "memory", "2Gi")},
				Containers: []corev1.Container{container(resources("cpu", "1"))},
				Overhead:   resources("cpu", "100m"),
			},
			want: resources("cpu", "3100m", "memory", "2Gi"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PodRequests(&corev1.Pod{Spec: tt.spec})
			if !equalResources(got, tt.want) {
				t.Errorf("PodRequests = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestResourceListArithmetic(t *testing.T) {
	a := resources("cpu", "2", "memory", "4Gi")
	b := resources("cpu", "500m", "pods", "1")
	if got, want := Merge(a, b, nil), resources("cpu", "2500m", "memory", "4Gi", "pods", "1"); !equalResources(got, want) {
		t.Errorf("Merge = %v, want %v", got, want)
	}
	if got, want := Subtract(a, b), resources("cpu", "1500m", "memory", "4Gi", "pods", "-1"); !equalResources(got, want) {
		t.Errorf("Subtract = %v, want %v", got, want)
	}
	if got := a[corev1.ResourceCPU]; got.Cmp(resource.MustParse("2")) != 0 {
		t.Errorf("Subtract changed its input: cpu %s", got.String())
	}
	if Cmp(a, b, corev1.ResourceCPU) != 1 || Cmp(a, b, "pods") != -1 || Cmp(a, b, "gpu") != 0 {
		t.Errorf("Cmp: cpu %d, pods %d, gpu %d", Cmp(a, b, corev1.ResourceCPU), Cmp(a, b, "pods"), Cmp(a, b, "gpu"))
	}
}

func TestFits(t *testing.T) {
	available := resources("cpu", "2", "memory", "4Gi", "pods", "110")
	tests := []struct {
		name     string
		requests corev1.ResourceList
		wantErr  string
	}{
		{"within", resources("cpu", "2", "memory", "1Gi"), ""},
		{"zero of a missing resource", resources("nvidia.com/gpu", "0"), ""},
		{"one short", resources("cpu", "2100m"), "resource cpu: requested 2100m, available 2"},
		{"missing resource", resources("nvidia.com/gpu", "1"), "resource nvidia.com/gpu: requested 1, available 0"},
		{"all shortfalls, sorted", resources("memory", "8Gi", "cpu", "3"),
			"resource cpu: requested 3, available 2\nresource memory: requested 8Gi, available 4Gi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErr(t, Fits(tt.requests, available), tt.wantErr)
		})
	}
}
