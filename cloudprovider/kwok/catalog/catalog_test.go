package catalog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/scheduling"
)

func defaultTypes(t *testing.T) cloudprovider.InstanceTypes {
	t.Helper()
	f, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	its, err := f.Build(BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return its
}

// labelValues collects, over all types, the values of key's single-valued label.
func labelValues(its cloudprovider.InstanceTypes, key string) sets.Set[string] {
	out := sets.New[string]()
	for _, it := range its {
		for _, v := range it.Requirements.Get(key).Values() {
			if it.Requirements.Get(key).Operator() == corev1.NodeSelectorOpIn {
				out.Insert(v)
			}
		}
	}
	return out
}

func TestDefaultCatalogCoverage(t *testing.T) {
	its := defaultTypes(t)
	if len(its) < 150 {
		t.Errorf("default catalog has %d instance types, want at least 150", len(its))
	}
	checks := []struct {
		key  string
		want []string
	}{
		{awsv1.LabelInstanceCategory, []string{"c", "m", "r", "t", "g", "p", "i"}},
		{awsv1.LabelInstanceGeneration, []string{"5", "6", "7"}},
		{awsv1.LabelInstanceFamily, []string{"m5", "c6g", "m7g", "r7i", "g5", "p4d", "i4i", "t3"}},
		{awsv1.LabelInstanceSize, []string{"large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge"}},
		{corev1.LabelArchStable, []string{"amd64", "arm64"}},
		{corev1.LabelOSStable, []string{"linux", "windows"}},
		{corev1.LabelTopologyZone, []string{"test-zone-a", "test-zone-b", "test-zone-c", "test-zone-d"}},
		{karpv1.CapacityTypeLabelKey, []string{"spot", "on-demand"}},
		{awsv1.LabelInstanceGPUName, []string{"a10g", "a100"}},
	}
	for _, c := range checks {
		if got := labelValues(its, c.key); !got.HasAll(c.want...) {
			t.Errorf("%s values %v lack some of %v", c.key, sets.List(got), c.want)
		}
	}
}

func TestDefaultCatalogTypesAreUsable(t *testing.T) {
	for _, it := range defaultTypes(t) {
		if len(it.Offerings.Available()) == 0 {
			t.Errorf("%s has no available offering", it.Name)
		}
		alloc := it.Allocatable()
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage} {
			if q := alloc[name]; q.Sign() <= 0 {
				t.Errorf("%s: allocatable %s = %s, want positive", it.Name, name, q.String())
			}
		}
		for _, key := range []string{corev1.LabelInstanceTypeStable, corev1.LabelArchStable, awsv1.LabelInstanceCPU, awsv1.LabelInstanceMemory, awsv1.LabelInstanceFamily, awsv1.LabelInstancePods} {
			if req := it.Requirements.Get(key); req.Operator() != corev1.NodeSelectorOpIn || req.Len() != 1 {
				t.Errorf("%s: label %s is %s, want one value", it.Name, key, req)
			}
		}
		var onDemand float64
		for _, o := range it.Offerings {
			if o.CapacityType() == karpv1.CapacityTypeOnDemand {
				onDemand = o.Price
			}
		}
		for _, o := range it.Offerings {
			// Spot is 30-40 % of on-demand, give or take the rounding to four decimals.
			if o.CapacityType() == karpv1.CapacityTypeSpot && (o.Price < 0.30*onDemand-0.0001 || o.Price > 0.40*onDemand+0.0001) {
				t.Errorf("%s: spot price %v in %s is not 30-40%% of on-demand %v", it.Name, o.Price, o.Zone(), onDemand)
			}
		}
	}
}

func TestDefaultCatalogGPUs(t *testing.T) {
	gpuCount := scheduling.NewRequirements(scheduling.NewRequirement(awsv1.LabelInstanceGPUCount, corev1.NodeSelectorOpGt, "0"))
	gpuTypes := cloudprovider.InstanceTypes(defaultTypes(t)).Compatible(gpuCount)
	if len(gpuTypes) < 10 {
		t.Fatalf("%d types match instance-gpu-count > 0, want at least 10", len(gpuTypes))
	}
	for _, it := range gpuTypes {
		resource := corev1.ResourceName("nvidia.com/gpu")
		if it.Requirements.Get(awsv1.LabelInstanceGPUManufacturer).Any() == "amd" {
			resource = "amd.com/gpu"
		}
		gpus := it.Capacity[resource]
		if gpus.Value() < 1 || it.Requirements.Get(awsv1.LabelInstanceGPUCount).Any() != gpus.String() {
			t.Errorf("%s: %s %s does not match its gpu-count label", it.Name, resource, gpus.String())
		}
		if !strings.HasPrefix(it.Name, "g") && !strings.HasPrefix(it.Name, "p") {
			t.Errorf("%s matches a GPU requirement", it.Name)
		}
	}
}

// TestDefaultCatalogEC2Facts: the Neuron types advertise their devices and cores as the Neuron
// device plugin does, with the accelerator labels; Nitro types advertise pod ENIs, burstable ones
// do not; types EC2 has carry its baseline network bandwidth, made-up shapes none.
func TestDefaultCatalogEC2Facts(t *testing.T) {
	byName := map[string]*cloudprovider.InstanceType{}
	for _, it := range defaultTypes(t) {
		byName[it.Name] = it
	}
	tests := []struct {
		name                   string
		neuron, cores, podENIs int64
		accelerator, bandwidth string
	}{
		{name: "inf2.xlarge", neuron: 1, cores: 2, podENIs: 18, accelerator: "inferentia2", bandwidth: "2083"},
		{name: "inf2.24xlarge", neuron: 6, cores: 12, podENIs: 107, accelerator: "inferentia2", bandwidth: "50000"},
		{name: "trn1.2xlarge", neuron: 1, cores: 2, podENIs: 38, accelerator: "trainium", bandwidth: "3125"},
		{name: "c5.large", podENIs: 9, bandwidth: "750"},
		{name: "c5.8xlarge", podENIs: 54},
		{name: "m6i.4xlarge", podENIs: 54, bandwidth: "6250"},
		{name: "g5.xlarge", podENIs: 18, bandwidth: "2500"},
		{name: "t3.large", bandwidth: "512"},
	}
	for _, tt := range tests {
		it := byName[tt.name]
		if it == nil {
			t.Errorf("%s is not in the catalog", tt.name)
			continue
		}
		for name, want := range map[corev1.ResourceName]int64{ResourceNeuron: tt.neuron, ResourceNeuronCore: tt.cores, ResourcePodENI: tt.podENIs} {
			if got := it.Allocatable()[name]; got.Value() != want {
				t.Errorf("%s allocates %s %s, want %d", tt.name, got.String(), name, want)
			}
		}
		if got := it.Requirements.Get(awsv1.LabelInstanceAcceleratorName); tt.accelerator == "" && got.Operator() != corev1.NodeSelectorOpDoesNotExist ||
			tt.accelerator != "" && got.Any() != tt.accelerator {
			t.Errorf("%s: accelerator-name requirement %s, want %q", tt.name, got, tt.accelerator)
		}
		if got := it.Requirements.Get(awsv1.LabelInstanceNetworkBandwidth); tt.bandwidth == "" && got.Operator() != corev1.NodeSelectorOpDoesNotExist ||
			tt.bandwidth != "" && got.Any() != tt.bandwidth {
			t.Errorf("%s: network-bandwidth requirement %s, want %q", tt.name, got, tt.bandwidth)
		}
		if tt.neuron > 0 && it.Requirements.Get(corev1.LabelOSStable).Has("windows") {
			t.Errorf("%s offers windows; the Neuron SDK is Linux only", tt.name)
		}
	}
}

func TestBuildSpecifics(t *testing.T) {
	f, err := Parse([]byte(`{"instanceTypes": [
		{"name": "m5.large", "arch": "amd64", "operatingSystems": ["linux", "windows"], "cpu": 2, "memoryMiB": 8192, "pods": 29,
		 "labels": {"karpenter.k8s.aws/instance-family": "m5"},
		 "offerings": [
			{"zone": "z1", "capacityType": "spot", "price": 0.03},
			{"zone": "z2", "capacityType": "on-demand", "price": 0.096, "unavailable": true},
			{"zone": "z1", "capacityType": "reserved", "price": 0.001, "reservationID": "cr-1", "reservationCapacity": 2}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	its, err := f.Build(BuildOptions{Kubelet: cloudprovider.KubeletSettings{MaxPods: ptr.To[int32](110)}, EphemeralStorage: resource.MustParse("100Gi")})
	if err != nil {
		t.Fatal(err)
	}
	it := its[0]
	wantAllocatable := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("1930m"),  // 2 − 70m
		corev1.ResourceMemory: resource.MustParse("6012Mi"), // 7577Mi − (11×110+255 = 1465)Mi − 100Mi
		corev1.ResourcePods:   resource.MustParse("110"),
		// 100Gi − 1Gi − 10Gi
		corev1.ResourceEphemeralStorage: resource.MustParse("89Gi"),
	}
	for name, want := range wantAllocatable {
		if got := it.Allocatable()[name]; got.Cmp(want) != 0 {
			t.Errorf("allocatable %s = %s, want %s", name, got.String(), want.String())
		}
	}
	if got := it.Requirements.Get(corev1.LabelTopologyZone).Values(); strings.Join(got, ",") != "z1,z2" {
		t.Errorf("zones = %v", got)
	}
	if got := it.Requirements.Get(karpv1.CapacityTypeLabelKey).Values(); strings.Join(got, ",") != "on-demand,reserved,spot" {
		t.Errorf("capacity types = %v", got)
	}
	if it.Offerings[1].Available {
		t.Error("offering marked unavailable is available")
	}
	if r := it.Offerings[2]; r.ReservationID() != "cr-1" || r.ReservationCapacity != 2 || !r.Available {
		t.Errorf("reserved offering = %+v", r)
	}
	if it.Requirements.Get(awsv1.LabelInstanceGPUCount).Operator() != corev1.NodeSelectorOpDoesNotExist {
		t.Error("a type without GPUs does not say DoesNotExist for the GPU count")
	}
}

func TestParseAndBuildErrors(t *testing.T) {
	valid := `"arch": "amd64", "operatingSystems": ["linux"], "cpu": 2, "memoryMiB": 4096, "pods": 29`
	offering := `"offerings": [{"zone": "z1", "capacityType": "spot", "price": 0.1}]`
	tests := []struct {
		name, catalog, wantErr string
	}{
		{name: "empty", catalog: `{"instanceTypes": []}`, wantErr: "no instance types"},
		{name: "unknown field", catalog: `{"instanceTypes": [{"name": "a", "cpus": 2}]}`, wantErr: "unknown field"},
		{name: "duplicate", catalog: `{"instanceTypes": [{"name": "a", ` + valid + `, ` + offering + `}, {"name": "a", ` + valid + `, ` + offering + `}]}`, wantErr: "listed twice"},
		{name: "bad arch", catalog: `{"instanceTypes": [{"name": "a", "arch": "s390x", "operatingSystems": ["linux"], "cpu": 2, "memoryMiB": 4096, "pods": 29, ` + offering + `}]}`, wantErr: "arch"},
		{name: "no offerings", catalog: `{"instanceTypes": [{"name": "a", ` + valid + `}]}`, wantErr: "no offerings"},
		{name: "bad capacity type", catalog: `{"instanceTypes": [{"name": "a", ` + valid + `, "offerings": [{"zone": "z1", "capacityType": "cheap", "price": 0.1}]}]}`, wantErr: "capacityType"},
		{name: "neuron without cores", catalog: `{"instanceTypes": [{"name": "a", ` + valid + `, "neuron": {"name": "inferentia2", "count": 1}, ` + offering + `}]}`, wantErr: "neuron"},
		{name: "negative pod ENIs", catalog: `{"instanceTypes": [{"name": "a", ` + valid + `, "podENI": -1, ` + offering + `}]}`, wantErr: "podENI"},
		{name: "reserved without id", catalog: `{"instanceTypes": [{"name": "a", ` + valid + `, "offerings": [{"zone": "z1", "capacityType": "reserved", "price": 0.1}]}]}`, wantErr: "reservationID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse([]byte(tt.catalog))
			if err == nil {
				_, err = f.Build(BuildOptions{})
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "catalog.json")
	if err := os.WriteFile(path, defaultCatalog, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	def, _ := Default()
	if len(f.InstanceTypes) != len(def.InstanceTypes) {
		t.Errorf("loaded %d types, embedded has %d", len(f.InstanceTypes), len(def.InstanceTypes))
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("Load of a missing file succeeded")
	}
}

// TestDefaultCatalogVolumeLimits: every type reports the EBS CSI driver's attach limit for
// its name (docs/simulation.md): shared Nitro slots less the instance store, dedicated limits
// by size.
func TestDefaultCatalogVolumeLimits(t *testing.T) {
	byName := map[string]*cloudprovider.InstanceType{}
	for _, it := range defaultTypes(t) {
		byName[it.Name] = it
		if _, ok := it.VolumeLimits[cloudprovider.EBSCSIDriver]; !ok {
			t.Errorf("%s has no %s limit", it.Name, cloudprovider.EBSCSIDriver)
		}
	}
	for name, want := range map[string]int32{
		"c5.large":     26, // 28 shared − 1 network interface − 1 root volume
		"i4i.large":    25, // and one NVMe instance store volume
		"m7i.large":    31, // dedicated 32 − root volume
		"c7a.16xlarge": 47, // dedicated 48
		"r7i.16xlarge": 47,
	} {
		it, ok := byName[name]
		if !ok {
			t.Errorf("%s is not in the catalog", name)
			continue
		}
		if got := it.VolumeLimits[cloudprovider.EBSCSIDriver]; got != want {
			t.Errorf("%s attaches %d volumes, want %d", name, got, want)
		}
	}
}
