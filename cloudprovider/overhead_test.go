package cloudprovider

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

func TestMemoryCapacity(t *testing.T) {
	tests := []struct {
		memoryMiB int64
		percent   float64
		want      string
	}{
		{memoryMiB: 8192, percent: DefaultVMMemoryOverheadPercent, want: "7577Mi"}, // 8192 − ⌈614.4⌉
		{memoryMiB: 4096, percent: DefaultVMMemoryOverheadPercent, want: "3788Mi"}, // 4096 − ⌈307.2⌉
		{memoryMiB: 1024, percent: 0.1, want: "921Mi"},                             // 1024 − ⌈102.4⌉
		{memoryMiB: 2048, percent: 0, want: "2Gi"},
	}
	for _, tt := range tests {
		got := MemoryCapacity(tt.memoryMiB, tt.percent)
		if want := resource.MustParse(tt.want); got.Cmp(want) != 0 {
			t.Errorf("MemoryCapacity(%d, %v) = %s, want %s", tt.memoryMiB, tt.percent, got.String(), tt.want)
		}
	}
}

func TestPods(t *testing.T) {
	tests := []struct {
		name        string
		defaultPods int64
		vcpus       int64
		settings    KubeletSettings
		want        int64
	}{
		{name: "instance type default", defaultPods: 29, vcpus: 2, want: 29},
		{name: "maxPods overrides the default", defaultPods: 29, vcpus: 2, settings: KubeletSettings{MaxPods: ptr.To[int32](110)}, want: 110},
		{name: "podsPerCore caps the default", defaultPods: 58, vcpus: 4, settings: KubeletSettings{PodsPerCore: ptr.To[int32](2)}, want: 8},
		{name: "podsPerCore above the default", defaultPods: 29, vcpus: 2, settings: KubeletSettings{PodsPerCore: ptr.To[int32](20)}, want: 29},
		{name: "lower of maxPods and podsPerCore", defaultPods: 58, vcpus: 4, settings: KubeletSettings{MaxPods: ptr.To[int32](20), PodsPerCore: ptr.To[int32](10)}, want: 20},
		{name: "podsPerCore lower than maxPods", defaultPods: 58, vcpus: 4, settings: KubeletSettings{MaxPods: ptr.To[int32](100), PodsPerCore: ptr.To[int32](10)}, want: 40},
		{name: "podsPerCore zero is ignored", defaultPods: 58, vcpus: 4, settings: KubeletSettings{PodsPerCore: ptr.To[int32](0)}, want: 58},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Pods(tt.defaultPods, tt.vcpus, tt.settings); got != tt.want {
				t.Errorf("Pods() = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestDefaultKubeReserved(t *testing.T) {
	tests := []struct {
		vcpus, pods int64
		cpu, memory string
	}{
		{vcpus: 1, pods: 4, cpu: "60m", memory: "299Mi"},       // 60m; 11×4+255
		{vcpus: 2, pods: 29, cpu: "70m", memory: "574Mi"},      // 60+10; 11×29+255
		{vcpus: 3, pods: 29, cpu: "75m", memory: "574Mi"},      // 60+10+5
		{vcpus: 4, pods: 58, cpu: "80m", memory: "893Mi"},      // 60+10+5+5; 11×58+255
		{vcpus: 8, pods: 58, cpu: "90m", memory: "893Mi"},      // 80+4×2.5
		{vcpus: 9, pods: 58, cpu: "93m", memory: "893Mi"},      // 80+5×2.5 = 92.5, rounded up
		{vcpus: 16, pods: 234, cpu: "110m", memory: "2829Mi"},  // 80+12×2.5; 11×234+255
		{vcpus: 64, pods: 737, cpu: "230m", memory: "8362Mi"},  // 80+60×2.5; 11×737+255
		{vcpus: 192, pods: 737, cpu: "550m", memory: "8362Mi"}, // 80+188×2.5
	}
	for _, tt := range tests {
		got := DefaultKubeReserved(tt.vcpus, tt.pods)
		want := corev1.ResourceList{
			corev1.ResourceCPU:              resource.MustParse(tt.cpu),
			corev1.ResourceMemory:           resource.MustParse(tt.memory),
			corev1.ResourceEphemeralStorage: resource.MustParse("1Gi"),
		}
		assertResources(t, "DefaultKubeReserved", got, want)
	}
}

func TestKubeReservedOverrides(t *testing.T) {
	got := KubeReserved(2, 29, KubeletSettings{KubeReserved: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}})
	assertResources(t, "KubeReserved", got, corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("200m"),
		corev1.ResourceMemory:           resource.MustParse("574Mi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Gi"),
	})
}

func TestEvictionThreshold(t *testing.T) {
	capacity := corev1.ResourceList{
		corev1.ResourceMemory:           resource.MustParse("8Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("20Gi"),
	}
	tests := []struct {
		name     string
		settings KubeletSettings
		want     corev1.ResourceList
		wantErr  bool
	}{
		{
			name: "kubelet defaults",
			want: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("100Mi"), corev1.ResourceEphemeralStorage: resource.MustParse("2Gi")},
		},
		{
			name: "larger of hard and soft, percentages of capacity",
			settings: KubeletSettings{
				EvictionHard: map[string]string{"memory.available": "5%", "nodefs.available": "10%"},
				EvictionSoft: map[string]string{"memory.available": "500Mi", "nodefs.available": "15%"},
			},
			// 5 % of 8Gi is 409.6Mi < 500Mi; 15 % of 20Gi is 3Gi.
			want: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("500Mi"), corev1.ResourceEphemeralStorage: resource.MustParse("3Gi")},
		},
		{
			name:     "hard percentage wins",
			settings: KubeletSettings{EvictionHard: map[string]string{"memory.available": "10%"}, EvictionSoft: map[string]string{"memory.available": "200Mi"}},
			// 10 % of 8Gi = 858993459.2 bytes, rounded up; nodefs keeps its default.
			want: corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(858993460, resource.BinarySI), corev1.ResourceEphemeralStorage: resource.MustParse("2Gi")},
		},
		{name: "bad percentage", settings: KubeletSettings{EvictionHard: map[string]string{"memory.available": "150%"}}, wantErr: true},
		{name: "bad quantity", settings: KubeletSettings{EvictionSoft: map[string]string{"nodefs.available": "lots"}}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := EvictionThreshold(capacity, tt.settings)
			if (err != nil) != tt.wantErr {
				t.Fatalf("EvictionThreshold() error = %v, wantErr %v", err, tt.wantErr)
			}
			if !tt.wantErr {
				assertResources(t, "EvictionThreshold", got, tt.want)
			}
		})
	}
}

// TestAllocatable walks the whole chain for an m5.large-like type: 2 vCPU, 8 GiB, 29 pods, 20Gi
// root volume.
func TestAllocatable(t *testing.T) {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("2"),
		corev1.ResourceMemory:           MemoryCapacity(8192, DefaultVMMemoryOverheadPercent), // 7577Mi
		corev1.ResourcePods:             *resource.NewQuantity(Pods(29, 2, KubeletSettings{}), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: resource.MustParse("20Gi"),
	}
	tests := []struct {
		name     string
		settings KubeletSettings
		want     corev1.ResourceList
	}{
		{
			name: "defaults",
			// cpu 2000m−70m; memory 7577Mi−574Mi−100Mi; storage 20Gi−1Gi−2Gi.
			want: corev1.ResourceList{
				corev1.ResourceCPU:              resource.MustParse("1930m"),
				corev1.ResourceMemory:           resource.MustParse("6903Mi"),
				corev1.ResourcePods:             resource.MustParse("29"),
				corev1.ResourceEphemeralStorage: resource.MustParse("17Gi"),
			},
		},
		{
			name: "system reserved and overrides",
			settings: KubeletSettings{
				SystemReserved: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("100Mi")},
				KubeReserved:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("100Mi")},
			},
			// cpu 2000m−200m−100m; memory 7577Mi−100Mi−100Mi−100Mi.
			want: corev1.ResourceList{
				corev1.ResourceCPU:              resource.MustParse("1700m"),
				corev1.ResourceMemory:           resource.MustParse("7277Mi"),
				corev1.ResourcePods:             resource.MustParse("29"),
				corev1.ResourceEphemeralStorage: resource.MustParse("17Gi"),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			overhead, err := NewOverhead(capacity, tt.settings)
			if err != nil {
				t.Fatal(err)
			}
			it := &InstanceType{Name: "m5.large", Capacity: capacity, Overhead: overhead}
			assertResources(t, "Allocatable", it.Allocatable(), tt.want)
		})
	}
}

func TestAllocatableNeverNegative(t *testing.T) {
	it := &InstanceType{
		Capacity: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
		Overhead: Overhead{KubeReserved: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("299Mi")}},
	}
	got := it.Allocatable()[corev1.ResourceMemory]
	if got.Sign() != 0 {
		t.Errorf("allocatable memory = %s, want 0", got.String())
	}
}

func assertResources(t *testing.T, what string, got, want corev1.ResourceList) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s = %v, want %v", what, got, want)
		return
	}
	for name, w := range want {
		if g, ok := got[name]; !ok || g.Cmp(w) != 0 {
			t.Errorf("%s[%s] = %s, want %s", what, name, g.String(), w.String())
		}
	}
}
