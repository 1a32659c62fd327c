package instancetype_test

import (
	"context"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	"github.com/joinery-dev/joinery/cloudprovider/aws/instancetype"
)

// TestPublishedFacts checks instance types built from the emulator's DescribeInstanceTypes
// against AWS's published facts: vCPUs and memory from the instance-type pages, pods from the
// EKS AMI's eni-max-pods list (ENIs × (IPv4 per ENI − 1) + 2), accelerators from the
// accelerated-computing pages.
func TestPublishedFacts(t *testing.T) {
	e := newEnv(t)
	its, err := e.provider(t, instancetype.Options{}).List(context.Background(), e.resolvedClass(), instancetype.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	types := byName(its)
	tests := []struct {
		name      string
		vcpu      int
		memoryMiB int64
		pods      int
		arch      string
		labels    map[string]string
		resources map[corev1.ResourceName]string
	}{
		{name: "m5.large", vcpu: 2, memoryMiB: 8192, pods: 29, arch: "amd64", labels: map[string]string{
			awsv1.LabelInstanceCategory: "m", awsv1.LabelInstanceFamily: "m5", awsv1.LabelInstanceGeneration: "5",
			awsv1.LabelInstanceSize: "large", awsv1.LabelInstanceHypervisor: "nitro", awsv1.LabelInstanceCPUManufacturer: "intel",
			awsv1.LabelInstanceEBSBandwidth: "4750", awsv1.LabelInstanceNetworkBandwidth: "750",
			awsv1.LabelInstanceEncryptionInTransitSupported: "false", awsv1.LabelInstanceCapabilityFlex: "false",
			awsv1.LabelInstanceGPUCount: "<absent>", awsv1.LabelInstanceLocalNVME: "<absent>",
		}, resources: map[corev1.ResourceName]string{instancetype.ResourcePodENI: "9", instancetype.ResourceNVIDIAGPU: "<none>"}},
		{name: "m5.xlarge", vcpu: 4, memoryMiB: 16384, pods: 58, arch: "amd64"},
		{name: "m5.4xlarge", vcpu: 16, memoryMiB: 65536, pods: 234, arch: "amd64"},
		{name: "m5.24xlarge", vcpu: 96, memoryMiB: 393216, pods: 737, arch: "amd64", labels: map[string]string{awsv1.LabelInstanceEBSBandwidth: "19000", awsv1.LabelInstanceNetworkBandwidth: "25000"}},
		{name: "c5.xlarge", vcpu: 4, memoryMiB: 8192, pods: 58, arch: "amd64", labels: map[string]string{awsv1.LabelInstanceNetworkBandwidth: "1250"}},
		{name: "c5.9xlarge", vcpu: 36, memoryMiB: 73728, pods: 234, arch: "amd64"},
		{name: "c5.18xlarge", vcpu: 72, memoryMiB: 147456, pods: 737, arch: "amd64"},
		{name: "c5a.2xlarge", vcpu: 8, memoryMiB: 16384, pods: 58, arch: "amd64", labels: map[string]string{
			// The seeds' NodeClaim example lists these for c5a.2xlarge.
			awsv1.LabelInstanceCPUManufacturer: "amd", awsv1.LabelInstanceEBSBandwidth: "3170", awsv1.LabelInstanceNetworkBandwidth: "2500",
			awsv1.LabelInstanceEncryptionInTransitSupported: "true", awsv1.LabelInstanceHypervisor: "nitro",
		}},
		{name: "t3.nano", vcpu: 2, memoryMiB: 512, pods: 4, arch: "amd64"},
		{name: "t3.micro", vcpu: 2, memoryMiB: 1024, pods: 4, arch: "amd64", resources: map[corev1.ResourceName]string{instancetype.ResourcePodENI: "<none>"}},
		{name: "t3.small", vcpu: 2, memoryMiB: 2048, pods: 11, arch: "amd64"},
		{name: "t3.medium", vcpu: 2, memoryMiB: 4096, pods: 17, arch: "amd64"},
		{name: "t3.large", vcpu: 2, memoryMiB: 8192, pods: 35, arch: "amd64"},
		{name: "t3a.small", vcpu: 2, memoryMiB: 2048, pods: 8, arch: "amd64"},
		{name: "t2.micro", vcpu: 1, memoryMiB: 1024, pods: 4, arch: "amd64", labels: map[string]string{
			awsv1.LabelInstanceHypervisor: "xen", awsv1.LabelInstanceEBSBandwidth: "<absent>"}},
		{name: "t2.xlarge", vcpu: 4, memoryMiB: 16384, pods: 44, arch: "amd64"},
		{name: "t4g.medium", vcpu: 2, memoryMiB: 4096, pods: 17, arch: "arm64", labels: map[string]string{awsv1.LabelInstanceCPUManufacturer: "aws"}},
		{name: "m6g.medium", vcpu: 1, memoryMiB: 4096, pods: 8, arch: "arm64", resources: map[corev1.ResourceName]string{instancetype.ResourcePodENI: "4"}},
		{name: "c7g.large", vcpu: 2, memoryMiB: 4096, pods: 29, arch: "arm64", labels: map[string]string{awsv1.LabelInstanceCPUSustainedClockSpeedMhz: "2600"}},
		{name: "r6i.2xlarge", vcpu: 8, memoryMiB: 65536, pods: 58, arch: "amd64"},
		{name: "m7i-flex.large", vcpu: 2, memoryMiB: 8192, pods: 29, arch: "amd64", labels: map[string]string{awsv1.LabelInstanceCapabilityFlex: "true", awsv1.LabelInstanceFamily: "m7i-flex", awsv1.LabelInstanceGeneration: "7"}},
		{name: "i3.large", vcpu: 2, memoryMiB: 15616, pods: 29, arch: "amd64", labels: map[string]string{awsv1.LabelInstanceLocalNVME: "475", awsv1.LabelInstanceHypervisor: "xen"}},
		{name: "i3.metal", vcpu: 72, memoryMiB: 524288, pods: 737, arch: "amd64", labels: map[string]string{awsv1.LabelInstanceHypervisor: "", awsv1.LabelInstanceLocalNVME: "15200"}},
		{name: "d3.xlarge", vcpu: 4, memoryMiB: 32768, pods: 10, arch: "amd64"},
		{name: "d3.8xlarge", vcpu: 32, memoryMiB: 262144, pods: 59, arch: "amd64"},
		{name: "x2iedn.xlarge", vcpu: 4, memoryMiB: 131072, pods: 58, arch: "amd64", labels: map[string]string{awsv1.LabelInstanceCategory: "x", awsv1.LabelInstanceLocalNVME: "118"}},
		{name: "g4dn.xlarge", vcpu: 4, memoryMiB: 16384, pods: 29, arch: "amd64", labels: map[string]string{
			awsv1.LabelInstanceGPUName: "t4", awsv1.LabelInstanceGPUManufacturer: "nvidia", awsv1.LabelInstanceGPUCount: "1", awsv1.LabelInstanceGPUMemory: "16384",
		}, resources: map[corev1.ResourceName]string{instancetype.ResourceNVIDIAGPU: "1"}},
		{name: "g4dn.12xlarge", vcpu: 48, memoryMiB: 196608, pods: 234, arch: "amd64", labels: map[string]string{awsv1.LabelInstanceGPUCount: "4"},
			resources: map[corev1.ResourceName]string{instancetype.ResourceNVIDIAGPU: "4", instancetype.ResourceEFA: "1"}},
		{name: "g4ad.xlarge", vcpu: 4, memoryMiB: 16384, pods: 8, arch: "amd64", labels: map[string]string{
			awsv1.LabelInstanceGPUName: "radeon-pro-v520", awsv1.LabelInstanceGPUManufacturer: "amd",
		}, resources: map[corev1.ResourceName]string{instancetype.ResourceAMDGPU: "1", instancetype.ResourceNVIDIAGPU: "<none>"}},
		{name: "g5.xlarge", vcpu: 4, memoryMiB: 16384, pods: 58, arch: "amd64", labels: map[string]string{
			awsv1.LabelInstanceGPUName: "a10g", awsv1.LabelInstanceGPUManufacturer: "nvidia", awsv1.LabelInstanceGPUCount: "1",
			awsv1.LabelInstanceGPUMemory: "24576", awsv1.LabelInstanceLocalNVME: "250", awsv1.LabelInstanceAcceleratorName: "<absent>",
		}, resources: map[corev1.ResourceName]string{instancetype.ResourceNVIDIAGPU: "1", instancetype.ResourceEFA: "<none>"}},
		{name: "g5.48xlarge", vcpu: 192, memoryMiB: 786432, pods: 345, arch: "amd64", resources: map[corev1.ResourceName]string{instancetype.ResourceNVIDIAGPU: "8"}},
		{name: "p4d.24xlarge", vcpu: 96, memoryMiB: 1179648, pods: 737, arch: "amd64", labels: map[string]string{
			awsv1.LabelInstanceGPUName: "a100", awsv1.LabelInstanceGPUCount: "8", awsv1.LabelInstanceGPUMemory: "40960", awsv1.LabelInstanceLocalNVME: "8000",
		}, resources: map[corev1.ResourceName]string{instancetype.ResourceNVIDIAGPU: "8", instancetype.ResourceEFA: "4"}},
		{name: "p5.48xlarge", vcpu: 192, memoryMiB: 2097152, pods: 100, arch: "amd64", labels: map[string]string{awsv1.LabelInstanceGPUName: "h100"},
			resources: map[corev1.ResourceName]string{instancetype.ResourceNVIDIAGPU: "8", instancetype.ResourceEFA: "32"}},
		{name: "inf2.xlarge", vcpu: 4, memoryMiB: 16384, pods: 58, arch: "amd64", labels: map[string]string{
			awsv1.LabelInstanceAcceleratorName: "inferentia2", awsv1.LabelInstanceAcceleratorManufacturer: "aws", awsv1.LabelInstanceAcceleratorCount: "1",
			awsv1.LabelInstanceGPUCount: "<absent>",
		}, resources: map[corev1.ResourceName]string{instancetype.ResourceNeuron: "1", instancetype.ResourceNeuronCore: "2"}},
		{name: "trn1.32xlarge", vcpu: 128, memoryMiB: 524288, pods: 247, arch: "amd64", labels: map[string]string{awsv1.LabelInstanceAcceleratorName: "trainium", awsv1.LabelInstanceAcceleratorCount: "16"},
			resources: map[corev1.ResourceName]string{instancetype.ResourceNeuron: "16", instancetype.ResourceEFA: "8"}},
	}
	if len(tests) < 20 {
		t.Fatalf("the table must cover at least 20 types, has %d", len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it, ok := types[tt.name]
			if !ok {
				t.Fatalf("%s not listed", tt.name)
			}
			want := map[string]string{
				corev1.LabelInstanceTypeStable: tt.name,
				corev1.LabelArchStable:         tt.arch,
				corev1.LabelOSStable:           "linux",
				corev1.LabelTopologyRegion:     "us-west-2",
				awsv1.LabelInstanceCPU:         strconv.Itoa(tt.vcpu),
				awsv1.LabelInstanceMemory:      strconv.FormatInt(tt.memoryMiB, 10),
				awsv1.LabelInstancePods:        strconv.Itoa(tt.pods),
			}
			for k, v := range tt.labels {
				want[k] = v
			}
			for key, value := range want {
				if got := label(it, key); got != value {
					t.Errorf("label %s = %q, want %q", key, got, value)
				}
			}
			for _, key := range awsv1.InstanceTypeLabels {
				if _, ok := it.Requirements[key]; !ok {
					t.Errorf("well-known label %s neither set nor DoesNotExist", key)
				}
			}
			if got := it.Capacity.Cpu().Value(); got != int64(tt.vcpu) {
				t.Errorf("cpu capacity = %d, want %d", got, tt.vcpu)
			}
			if got := it.Capacity.Pods().Value(); got != int64(tt.pods) {
				t.Errorf("pods capacity = %d, want %d", got, tt.pods)
			}
			wantMemory := cloudproviderMemory(tt.memoryMiB)
			if got := it.Capacity.Memory(); got.Cmp(wantMemory) != 0 {
				t.Errorf("memory capacity = %s, want %s (advertised less 7.5 %%)", got.String(), wantMemory.String())
			}
			for name, value := range tt.resources {
				if got := quantity(it.Capacity, name); got != value {
					t.Errorf("capacity %s = %s, want %s", name, got, value)
				}
			}
		})
	}
}

// cloudproviderMemory is memory less the default 7.5 % VM overhead, rounded up to whole MiB.
func cloudproviderMemory(mib int64) resource.Quantity {
	overhead := (mib*75 + 999) / 1000
	return *resource.NewQuantity((mib-overhead)<<20, resource.BinarySI)
}

// TestAllocatable checks capacity minus overhead for m5.large under AL2023 by hand:
//
//	cpu:     2 vCPUs; kube-reserved 6 % of core 1 + 1 % of core 2 = 70m → 1930m
//	memory:  8192Mi − ceil(7.5 % × 8192Mi) = 8192 − 615 = 7577Mi capacity;
//	         kube-reserved 11Mi × 29 pods + 255Mi = 574Mi; eviction memory.available 100Mi
//	         → 7577 − 574 − 100 = 6903Mi
//	storage: AL2023's 20Gi root volume; kube-reserved 1Gi; eviction nodefs.available 10 % = 2Gi
//	         → 17Gi
//	pods:    3 ENIs × (10 − 1) + 2 = 29
func TestAllocatable(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name     string
		class    func(*awsv1.EC2NodeClass)
		opts     instancetype.Options
		instance string
		want     map[corev1.ResourceName]string
	}{
		{name: "AL2023 defaults", instance: "m5.large",
			want: map[corev1.ResourceName]string{"cpu": "1930m", "memory": "6903Mi", "ephemeral-storage": "17Gi", "pods": "29"}},
		{name: "kubelet maxPods, systemReserved and evictionHard", instance: "m5.large",
			class: func(c *awsv1.EC2NodeClass) {
				c.Spec.Kubelet = &awsv1.KubeletConfiguration{
					MaxPods:        ptr.To[int32](20),
					SystemReserved: map[string]string{"cpu": "100m", "memory": "200Mi", "pid": "1000"},
					EvictionHard:   map[string]string{"memory.available": "500Mi", "nodefs.available": "5%"},
				}
			},
			// memory: 7577 − (11×20+255 = 475) − 200 − 500 = 6402Mi; storage: 20Gi − 1Gi − 1Gi (5 %)
			want: map[corev1.ResourceName]string{"cpu": "1830m", "memory": "6402Mi", "ephemeral-storage": "18Gi", "pods": "20"}},
		{name: "kubeReserved replaces the default", instance: "m5.large",
			class: func(c *awsv1.EC2NodeClass) {
				c.Spec.Kubelet = &awsv1.KubeletConfiguration{KubeReserved: map[string]string{"cpu": "500m", "memory": "1Gi"}}
			},
			// memory: 7577 − 1024 − 100 = 6453Mi
			want: map[corev1.ResourceName]string{"cpu": "1500m", "memory": "6453Mi", "pods": "29"}},
		{name: "podsPerCore caps density", instance: "m5.large",
			class: func(c *awsv1.EC2NodeClass) {
				c.Spec.Kubelet = &awsv1.KubeletConfiguration{PodsPerCore: ptr.To[int32](2)}
			},
			want: map[corev1.ResourceName]string{"pods": "4"}},
		{name: "RESERVED_ENIS lowers ENI-limited density", instance: "m5.large", opts: instancetype.Options{ReservedENIs: 1},
			// (3 − 1) × 9 + 2
			want: map[corev1.ResourceName]string{"pods": "20"}},
		{name: "no VM memory overhead", instance: "m5.large", opts: instancetype.Options{VMMemoryOverheadPercent: ptr.To(0.0)},
			// 8192 − 574 − 100
			want: map[corev1.ResourceName]string{"memory": "7518Mi"}},
		{name: "RAID0 instance store backs ephemeral storage", instance: "m5d.large",
			class: func(c *awsv1.EC2NodeClass) { c.Spec.InstanceStorePolicy = ptr.To(awsv1.InstanceStorePolicyRAID0) },
			// 75G − 1Gi − 7.5G (10 %)
			want: map[corev1.ResourceName]string{"ephemeral-storage": strconv.FormatInt(75e9-1<<30-75e8, 10)}},
		{name: "RAID0 without instance store keeps the root volume", instance: "m5.large",
			class: func(c *awsv1.EC2NodeClass) { c.Spec.InstanceStorePolicy = ptr.To(awsv1.InstanceStorePolicyRAID0) },
			want:  map[corev1.ResourceName]string{"ephemeral-storage": "17Gi"}},
		{name: "root volume marked in blockDeviceMappings", instance: "c5.xlarge",
			class: func(c *awsv1.EC2NodeClass) {
				c.Spec.BlockDeviceMappings = []awsv1.BlockDeviceMapping{
					{DeviceName: ptr.To("/dev/xvda"), EBS: &awsv1.BlockDevice{VolumeSize: ptr.To(resource.MustParse("10Gi"))}},
					{DeviceName: ptr.To("/dev/xvdc"), EBS: &awsv1.BlockDevice{VolumeSize: ptr.To(resource.MustParse("100Gi"))}, RootVolume: true},
				}
			},
			// 100Gi − 1Gi − 10Gi
			want: map[corev1.ResourceName]string{"ephemeral-storage": "89Gi"}},
		{name: "Bottlerocket's data volume", instance: "c5.xlarge",
			class: func(c *awsv1.EC2NodeClass) {
				c.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "bottlerocket@latest"}}
				c.Spec.BlockDeviceMappings = []awsv1.BlockDeviceMapping{
					{DeviceName: ptr.To("/dev/xvda"), EBS: &awsv1.BlockDevice{VolumeSize: ptr.To(resource.MustParse("4Gi"))}},
					{DeviceName: ptr.To("/dev/xvdb"), EBS: &awsv1.BlockDevice{VolumeSize: ptr.To(resource.MustParse("50Gi"))}},
				}
			},
			// 50Gi − 1Gi − 5Gi
			want: map[corev1.ResourceName]string{"ephemeral-storage": "44Gi"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			class := e.resolvedClass()
			if tt.class != nil {
				tt.class(class)
			}
			its, err := e.provider(t, tt.opts).List(context.Background(), class, instancetype.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			it := byName(its)[tt.instance]
			if it == nil {
				t.Fatalf("%s not listed", tt.instance)
			}
			allocatable := it.Allocatable()
			for name, value := range tt.want {
				want := resource.MustParse(value)
				got := allocatable[name]
				if name == corev1.ResourcePods {
					got = it.Capacity[name]
				}
				if got.Cmp(want) != 0 {
					t.Errorf("allocatable %s = %s, want %s", name, got.String(), value)
				}
			}
		})
	}
}

func TestWindowsClass(t *testing.T) {
	e := newEnv(t)
	class := e.resolvedClass()
	class.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "windows2022@latest"}}
	class.Status.AMIs = []awsv1.AMI{amiReq("amd64")}
	its, err := e.provider(t, instancetype.Options{}).List(context.Background(), class, instancetype.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range its {
		if label(it, corev1.LabelOSStable) != "windows" || label(it, corev1.LabelWindowsBuild) != "10.0.20348" || label(it, corev1.LabelArchStable) != "amd64" {
			t.Fatalf("%s: os %s build %s arch %s", it.Name, label(it, corev1.LabelOSStable), label(it, corev1.LabelWindowsBuild), label(it, corev1.LabelArchStable))
		}
	}
	if len(its) == 0 {
		t.Fatal("no types for a Windows class")
	}
	// Windows AMIs boot from a 50Gi /dev/sda1: 50 − 1 − 5.
	m5 := byName(its)["m5.large"]
	if got := m5.Allocatable()[corev1.ResourceEphemeralStorage]; got.Cmp(resource.MustParse("44Gi")) != 0 {
		t.Errorf("ephemeral-storage = %s, want 44Gi", got.String())
	}
}
