package cloudprovider

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/joinery-dev/joinery/apis/karpenter/v1alpha1"
)

const testCPULabel = "example.com/instance-cpu"

// overlayCatalog: m5.large (2 cpu) and m5.xlarge (4 cpu), c5.large (2 cpu, no family label
// for the DoesNotExist rows), each on-demand in zone-a at 1.0 and spot in zone-b at 0.4.
func overlayCatalog() InstanceTypes {
	mk := func(name, family, cpu string) *InstanceType {
		it := testType(name, family, NewOffering("zone-a", "on-demand", 1.0, true), NewOffering("zone-b", "spot", 0.4, true))
		it.Requirements.Add(req(testCPULabel, corev1.NodeSelectorOpIn, cpu))
		if family == "" {
			delete(it.Requirements, testFamilyLabel)
			it.Requirements.Add(req(testFamilyLabel, corev1.NodeSelectorOpDoesNotExist))
		}
		it.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}
		it.Overhead = Overhead{
			KubeReserved:      corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("80m"), corev1.ResourceMemory: resource.MustParse("500Mi")},
			EvictionThreshold: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("100Mi")},
		}
		return it
	}
	return InstanceTypes{mk("m5.large", "m5", "2"), mk("m5.xlarge", "m5", "4"), mk("c5.large", "", "2")}
}

type overlayOpt func(*v1alpha1.NodeOverlay)

func newOverlay(name string, weight int32, opts ...overlayOpt) *v1alpha1.NodeOverlay {
	o := &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if weight > 0 {
		o.Spec.Weight = ptr.To(weight)
	}
	for _, opt := range opts {
		opt(o)
	}
	return o
}

func requirement(key string, op corev1.NodeSelectorOperator, values ...string) overlayOpt {
	return func(o *v1alpha1.NodeOverlay) {
		o.Spec.Requirements = append(o.Spec.Requirements, v1alpha1.NodeSelectorRequirement{Key: key, Operator: op, Values: values})
	}
}

func price(p string) overlayOpt {
	return func(o *v1alpha1.NodeOverlay) { o.Spec.Price = ptr.To(p) }
}

func adjust(a string) overlayOpt {
	return func(o *v1alpha1.NodeOverlay) { o.Spec.PriceAdjustment = ptr.To(a) }
}

func capacity(name corev1.ResourceName, q string) overlayOpt {
	return func(o *v1alpha1.NodeOverlay) {
		if o.Spec.Capacity == nil {
			o.Spec.Capacity = corev1.ResourceList{}
		}
		o.Spec.Capacity[name] = resource.MustParse(q)
	}
}

// changedPrices lists "type/capacity-type=price" for every offering whose price differs from the base.
func changedPrices(base, got InstanceTypes) string {
	var out []string
	for i, it := range got {
		for j, o := range it.Offerings {
			if o.Price != base[i].Offerings[j].Price {
				out = append(out, it.Name+"/"+o.CapacityType()+"="+strconvFloat(o.Price))
			}
		}
	}
	return strings.Join(out, ",")
}

func strconvFloat(f float64) string {
	return strconv.FormatFloat(math.Round(f*1000)/1000, 'f', -1, 64)
}

func apply(t *testing.T, nodePool string, overlays ...*v1alpha1.NodeOverlay) (InstanceTypes, InstanceTypes, *NodeOverlays) {
	t.Helper()
	s := NewNodeOverlays()
	for _, o := range overlays {
		s.Set(o)
	}
	if invalid := s.Invalid(); len(invalid) > 0 {
		t.Fatalf("invalid overlays: %v", invalid)
	}
	base := overlayCatalog()
	return base, s.Apply(nodePool, base), s
}

// TestOverlayOperators: an overlay's requirements select offerings with each of the 8
// operators, on the type's labels, the offering's capacity type and the NodePool's name.
func TestOverlayOperators(t *testing.T) {
	tests := []struct {
		name string
		reqs []overlayOpt
		want string
	}{
		{"no requirements match everything", nil, "m5.large/on-demand=0.5,m5.large/spot=0.5,m5.xlarge/on-demand=0.5,m5.xlarge/spot=0.5,c5.large/on-demand=0.5,c5.large/spot=0.5"},
		{"In on the instance type", []overlayOpt{requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.xlarge")}, "m5.xlarge/on-demand=0.5,m5.xlarge/spot=0.5"},
		{"In on the deprecated instance type key", []overlayOpt{requirement(corev1.LabelInstanceType, corev1.NodeSelectorOpIn, "m5.xlarge")}, "m5.xlarge/on-demand=0.5,m5.xlarge/spot=0.5"},
		{"NotIn on the family, absent label included", []overlayOpt{requirement(testFamilyLabel, corev1.NodeSelectorOpNotIn, "m5")}, "c5.large/on-demand=0.5,c5.large/spot=0.5"},
		{"Exists on the family", []overlayOpt{requirement(testFamilyLabel, corev1.NodeSelectorOpExists), requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large")}, "m5.large/on-demand=0.5,m5.large/spot=0.5"},
		{"DoesNotExist on the family", []overlayOpt{requirement(testFamilyLabel, corev1.NodeSelectorOpDoesNotExist)}, "c5.large/on-demand=0.5,c5.large/spot=0.5"},
		{"Gt on cpu", []overlayOpt{requirement(testCPULabel, corev1.NodeSelectorOpGt, "2")}, "m5.xlarge/on-demand=0.5,m5.xlarge/spot=0.5"},
		{"Lt on cpu", []overlayOpt{requirement(testCPULabel, corev1.NodeSelectorOpLt, "4"), requirement(testFamilyLabel, corev1.NodeSelectorOpIn, "m5")}, "m5.large/on-demand=0.5,m5.large/spot=0.5"},
		{"Gte on cpu", []overlayOpt{requirement(testCPULabel, "Gte", "4")}, "m5.xlarge/on-demand=0.5,m5.xlarge/spot=0.5"},
		{"Lte on cpu", []overlayOpt{requirement(testCPULabel, "Lte", "2"), requirement(testFamilyLabel, corev1.NodeSelectorOpExists)}, "m5.large/on-demand=0.5,m5.large/spot=0.5"},
		{"In on the capacity type picks offerings", []overlayOpt{requirement("karpenter.sh/capacity-type", corev1.NodeSelectorOpIn, "spot"), requirement(testFamilyLabel, corev1.NodeSelectorOpIn, "m5")}, "m5.large/spot=0.5,m5.xlarge/spot=0.5"},
		{"In on the zone picks offerings", []overlayOpt{requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-a"), requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5.large")}, "c5.large/on-demand=0.5"},
		{"In on the NodePool matches its pool", []overlayOpt{requirement("karpenter.sh/nodepool", corev1.NodeSelectorOpIn, "default"), requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5.large")}, "c5.large/on-demand=0.5,c5.large/spot=0.5"},
		{"In on another NodePool matches nothing", []overlayOpt{requirement("karpenter.sh/nodepool", corev1.NodeSelectorOpIn, "other")}, ""},
		{"In on a label no type carries matches nothing", []overlayOpt{requirement("example.com/team", corev1.NodeSelectorOpIn, "a")}, ""},
		{"NotIn on a label no type carries matches everything", []overlayOpt{requirement("example.com/team", corev1.NodeSelectorOpNotIn, "a"), requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large")}, "m5.large/on-demand=0.5,m5.large/spot=0.5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, got, _ := apply(t, "default", newOverlay("o", 1, append(tt.reqs, price("0.5"))...))
			if diff := changedPrices(base, got); diff != tt.want {
				t.Errorf("changed prices = %q, want %q", diff, tt.want)
			}
		})
	}
}

// TestOverlayPriceArithmetic: price replaces, priceAdjustment adds an amount or a percentage,
// and nothing drops below zero.
func TestOverlayPriceArithmetic(t *testing.T) {
	tests := []struct {
		change     overlayOpt
		onDemand   float64 // base 1.0
		spot       float64 // base 0.4
		wantChange bool
	}{
		{price("0.25"), 0.25, 0.25, true},
		{price("0"), 0, 0, true},
		{adjust("+0.1"), 1.1, 0.5, true},
		{adjust("-0.05"), 0.95, 0.35, true},
		{adjust("-0.5"), 0.5, 0, true},
		{adjust("-10%"), 0.9, 0.36, true},
		{adjust("+50%"), 1.5, 0.6, true},
		{adjust("-100%"), 0, 0, true},
		{adjust("+0"), 1.0, 0.4, false},
	}
	for _, tt := range tests {
		o := newOverlay("o", 1, requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large"), tt.change)
		name := ptr.Deref(o.Spec.Price, "") + ptr.Deref(o.Spec.PriceAdjustment, "")
		t.Run(name, func(t *testing.T) {
			base, got, _ := apply(t, "", o)
			if od := got[0].Offerings[0].Price; math.Abs(od-tt.onDemand) > 1e-9 {
				t.Errorf("on-demand price = %v, want %v", od, tt.onDemand)
			}
			if sp := got[0].Offerings[1].Price; math.Abs(sp-tt.spot) > 1e-9 {
				t.Errorf("spot price = %v, want %v", sp, tt.spot)
			}
			if changed := got[0] != base[0]; changed != tt.wantChange {
				t.Errorf("instance type copied = %t, want %t", changed, tt.wantChange)
			}
			if base[0].Offerings[0].Price != 1.0 || base[0].Offerings[1].Price != 0.4 {
				t.Errorf("the provider's instance type was modified: %v, %v", base[0].Offerings[0].Price, base[0].Offerings[1].Price)
			}
			if got[1] != base[1] || got[2] != base[2] {
				t.Errorf("types the overlay does not match were copied")
			}
		})
	}
}

func TestParsePriceAdjustmentRejects(t *testing.T) {
	for _, s := range []string{"0.1", "10%", "+", "-", "+abc", "-101%", "+1e400", ""} {
		if _, err := parsePriceAdjustment(s); err == nil || !strings.Contains(err.Error(), "spec.priceAdjustment") {
			t.Errorf("parsePriceAdjustment(%q) = %v, want an error naming spec.priceAdjustment", s, err)
		}
	}
	s := NewNodeOverlays()
	s.Set(newOverlay("both", 1, price("1"), adjust("+1")))
	s.Set(newOverlay("negative", 1, capacity("hugepages-2Mi", "-1Mi")))
	invalid := s.Invalid()
	if err := invalid["both"]; err == nil || !strings.Contains(err.Error(), "mutually exclusive") {
		t.Errorf("price and priceAdjustment together: %v", err)
	}
	if err := invalid["negative"]; err == nil || !strings.Contains(err.Error(), "spec.capacity[hugepages-2Mi]") {
		t.Errorf("negative capacity: %v", err)
	}
	if got := s.Apply("", overlayCatalog()); changedPrices(overlayCatalog(), got) != "" {
		t.Errorf("invalid overlays were applied")
	}
}

// TestOverlayCapacity: capacity adds extended resources, overrides one the type has, and for
// cpu and memory sets the node's overhead.
func TestOverlayCapacity(t *testing.T) {
	large := requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large")
	_, got, _ := apply(t, "", newOverlay("hugepages", 1, large, capacity("hugepages-2Mi", "1Gi"), capacity(corev1.ResourcePods, "58")))
	if q := got[0].Capacity["hugepages-2Mi"]; q.Cmp(resource.MustParse("1Gi")) != 0 {
		t.Errorf("hugepages-2Mi capacity = %s, want 1Gi", q.String())
	}
	if q := got[0].Allocatable()["hugepages-2Mi"]; q.Cmp(resource.MustParse("1Gi")) != 0 {
		t.Errorf("hugepages-2Mi allocatable = %s, want 1Gi", q.String())
	}
	if q := got[0].Capacity[corev1.ResourcePods]; q.Value() != 58 {
		t.Errorf("pods = %s, want 58", q.String())
	}
	if _, ok := got[1].Capacity["hugepages-2Mi"]; ok {
		t.Errorf("m5.xlarge got hugepages it was not selected for")
	}

	base, got, _ := apply(t, "", newOverlay("overhead", 1, large, capacity(corev1.ResourceMemory, "50Mi"), capacity(corev1.ResourceCPU, "0")))
	alloc := got[0].Allocatable()
	wantMem := resource.MustParse("8Gi")
	wantMem.Sub(resource.MustParse("50Mi"))
	if q := alloc[corev1.ResourceMemory]; q.Cmp(wantMem) != 0 {
		t.Errorf("memory allocatable = %s, want %s (8Gi less the 50Mi overhead)", q.String(), wantMem.String())
	}
	if q := alloc[corev1.ResourceCPU]; q.Cmp(resource.MustParse("2")) != 0 {
		t.Errorf("cpu allocatable = %s, want 2 (no cpu overhead)", q.String())
	}
	if q := base[0].Allocatable()[corev1.ResourceMemory]; q.Cmp(wantMem) == 0 {
		t.Errorf("the provider's type changed too")
	}
}

// TestOverlayWeights: per field the higher weight wins; capacity of different resources from
// different overlays merges.
func TestOverlayWeights(t *testing.T) {
	all := requirement(testFamilyLabel, corev1.NodeSelectorOpIn, "m5")
	_, got, s := apply(t, "default",
		newOverlay("a-low", 10, all, price("5"), capacity("hugepages-2Mi", "100Mi")),
		newOverlay("z-high", 50, all, adjust("-50%"), capacity("example.com/fuse", "10")),
	)
	if p := got[0].Offerings[0].Price; p != 0.5 {
		t.Errorf("price = %v, want 0.5 (z-high's -50%% beats a-low's price by weight)", p)
	}
	if q := got[0].Capacity["hugepages-2Mi"]; q.Cmp(resource.MustParse("100Mi")) != 0 {
		t.Errorf("hugepages-2Mi = %s, want a-low's 100Mi (no higher-weight overlay sets it)", q.String())
	}
	if q := got[0].Capacity["example.com/fuse"]; q.Value() != 10 {
		t.Errorf("example.com/fuse = %s, want 10", q.String())
	}
	if c := s.Conflicts("default"); len(c) != 0 {
		t.Errorf("conflicts = %v, want none (different weights)", c)
	}
}

// TestOverlayConflicts: equal weights with different values for a field: the alphabetically
// first wins, the other is reported naming it; equal values and different fields do not
// conflict.
func TestOverlayConflicts(t *testing.T) {
	large := requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large")
	tests := []struct {
		name      string
		overlays  []*v1alpha1.NodeOverlay
		wantPrice float64
		wantMem   string // m5.large's memory overhead; "" leaves it unchecked
		want      map[string]string
	}{
		{
			name:      "price against price",
			overlays:  []*v1alpha1.NodeOverlay{newOverlay("b", 10, large, price("2")), newOverlay("a", 10, large, price("3"))},
			wantPrice: 3,
			want:      map[string]string{"b": "conflict with overlay a (price"},
		},
		{
			name:      "price against priceAdjustment",
			overlays:  []*v1alpha1.NodeOverlay{newOverlay("cheap", 10, adjust("-10%")), newOverlay("fixed", 10, large, price("7"))},
			wantPrice: 0.9,
			want:      map[string]string{"fixed": "conflict with overlay cheap (price"},
		},
		{
			name: "the seed's memory overlays",
			overlays: []*v1alpha1.NodeOverlay{
				newOverlay("memory-1", 90, requirement(testCPULabel, corev1.NodeSelectorOpGt, "1"), capacity(corev1.ResourceMemory, "50Mi")),
				newOverlay("capacity-1", 90, requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5.large", "m5.large"), capacity(corev1.ResourceMemory, "100Mi")),
			},
			wantPrice: 1, wantMem: "100Mi",
			want: map[string]string{"memory-1": "conflict with overlay capacity-1 (capacity memory"},
		},
		{
			name:      "same value is no conflict",
			overlays:  []*v1alpha1.NodeOverlay{newOverlay("a", 10, large, price("2")), newOverlay("b", 10, price("2.0"))},
			wantPrice: 2,
			want:      map[string]string{},
		},
		{
			name:      "different fields are no conflict",
			overlays:  []*v1alpha1.NodeOverlay{newOverlay("a", 10, large, price("2")), newOverlay("b", 10, large, capacity("hugepages-2Mi", "1Gi"))},
			wantPrice: 2,
			want:      map[string]string{},
		},
		{
			name:      "disjoint requirements are no conflict",
			overlays:  []*v1alpha1.NodeOverlay{newOverlay("a", 10, large, price("2")), newOverlay("b", 10, requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.xlarge"), price("3"))},
			wantPrice: 2,
			want:      map[string]string{},
		},
		{
			name: "a higher weight decides before a tie below it",
			overlays: []*v1alpha1.NodeOverlay{
				newOverlay("a", 10, large, price("2")), newOverlay("b", 10, large, price("3")), newOverlay("c", 20, large, price("4")),
			},
			wantPrice: 4,
			want:      map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got, s := apply(t, "default", tt.overlays...)
			if p := got[0].Offerings[0].Price; math.Abs(p-tt.wantPrice) > 1e-9 {
				t.Errorf("m5.large on-demand price = %v, want %v", p, tt.wantPrice)
			}
			if tt.wantMem != "" {
				if q := got[0].Overhead.Total()[corev1.ResourceMemory]; q.Cmp(resource.MustParse(tt.wantMem)) != 0 {
					t.Errorf("memory overhead = %s, want %s", q.String(), tt.wantMem)
				}
			}
			conflicts := s.Conflicts("default")
			if len(conflicts) != len(tt.want) {
				t.Errorf("conflicts = %v, want %v", conflicts, tt.want)
			}
			for name, prefix := range tt.want {
				if !strings.HasPrefix(conflicts[name], prefix) {
					t.Errorf("conflict of %s = %q, want it to start with %q", name, conflicts[name], prefix)
				}
			}
			if c := s.Conflicts("other"); len(c) != 0 {
				t.Errorf("conflicts of a NodePool never applied = %v, want none", c)
			}
		})
	}
}

// TestNodeOverlaysTrackChanges: Apply reflects every Set, Delete and Replace at once, and
// caches per NodePool while nothing changes.
func TestNodeOverlaysTrackChanges(t *testing.T) {
	s := NewNodeOverlays()
	base := overlayCatalog()
	if got := s.Apply("default", base); got[0] != base[0] {
		t.Fatalf("no overlays: types were copied")
	}
	large := requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large")
	s.Set(newOverlay("o", 1, large, price("0.1")))
	first := s.Apply("default", base)
	if first[0].Offerings[0].Price != 0.1 {
		t.Fatalf("after Set: price %v, want 0.1", first[0].Offerings[0].Price)
	}
	if again := s.Apply("default", base); again[0] != first[0] {
		t.Errorf("a second Apply with nothing changed evaluated again")
	}
	o := newOverlay("o", 1, large, price("0.2"))
	o.Generation = 2
	s.Set(o)
	if got := s.Apply("default", base); got[0].Offerings[0].Price != 0.2 {
		t.Errorf("after an update: price %v, want 0.2", got[0].Offerings[0].Price)
	}
	s.Replace(nil)
	if got := s.Apply("default", base); got[0] != base[0] {
		t.Errorf("after Replace(nil): types still changed")
	}
	s.Replace([]v1alpha1.NodeOverlay{*newOverlay("p", 1, large, price("0.3"))})
	if got := s.Apply("default", base); got[0].Offerings[0].Price != 0.3 {
		t.Errorf("after Replace: price %v, want 0.3", got[0].Offerings[0].Price)
	}
	s.Delete("p")
	if got := s.Apply("default", base); got[0] != base[0] {
		t.Errorf("after Delete: types still changed")
	}
}

// TestNodeOverlaysConcurrentUse: listings apply while a watch changes the set (run with -race).
func TestNodeOverlaysConcurrentUse(t *testing.T) {
	s := NewNodeOverlays()
	base := overlayCatalog()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 200 {
			o := newOverlay("o", 1, price(strconv.Itoa(i%7)))
			o.Generation = int64(i + 1)
			s.Set(o)
			if i%10 == 0 {
				s.Delete("o")
			}
		}
	}()
	for range 200 {
		for _, np := range []string{"a", "b"} {
			got := s.Apply(np, base)
			if len(got) != len(base) {
				t.Fatalf("Apply returned %d types, want %d", len(got), len(base))
			}
			_ = s.Conflicts(np)
		}
	}
	<-done
	for _, it := range base {
		if it.Offerings[0].Price != 1.0 {
			t.Fatalf("the provider's %s was modified", it.Name)
		}
	}
}

func devices(value string) overlayOpt {
	return func(o *v1alpha1.NodeOverlay) {
		if o.Annotations == nil {
			o.Annotations = map[string]string{}
		}
		o.Annotations[DevicesAnnotationKey] = value
	}
}

// deviceCatalog is overlayCatalog with one a10g on m5.xlarge and an EBS attach limit on every
// type.
func deviceCatalog() InstanceTypes {
	its := overlayCatalog()
	for _, it := range its {
		it.VolumeLimits = map[string]int32{EBSCSIDriver: 26}
	}
	its[1].Devices = []DeviceSet{{Driver: NVIDIAGPUDriver, Model: "a10g", Count: 1, MemoryMiB: 24576}}
	return its
}

// describeDevices lists "type=driver/model×count" for every type with devices.
func describeDevices(its InstanceTypes) string {
	var out []string
	for _, it := range its {
		for _, d := range it.Devices {
			out = append(out, fmt.Sprintf("%s=%s/%s×%d", it.Name, d.Driver, d.Model, d.Count))
		}
	}
	return strings.Join(out, ",")
}

// TestOverlayDevices: the joinery.dev/devices annotation replaces the devices of the types the
// overlay matches (an empty list removes them), per NodePool, the highest weight winning and
// same-weight disagreements reported as conflicts; other fields of a type an overlay changes
// (its devices, its attach limits) are kept.
func TestOverlayDevices(t *testing.T) {
	large := requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large")
	xlarge := requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.xlarge")
	const b200 = `[{"driver":"gpu.nvidia.com","model":"b200","count":2,"memoryMiB":184320}]`
	tests := []struct {
		name     string
		nodePool string
		overlays []*v1alpha1.NodeOverlay
		want     string
		// conflicts are the losers, each with the start of its message.
		conflicts map[string]string
	}{
		{name: "no overlay keeps the catalog's", want: "m5.xlarge=gpu.nvidia.com/a10g×1"},
		{
			name:     "a GPU-less type gets devices",
			overlays: []*v1alpha1.NodeOverlay{newOverlay("b200", 1, large, devices(b200))},
			want:     "m5.large=gpu.nvidia.com/b200×2,m5.xlarge=gpu.nvidia.com/a10g×1",
		},
		{
			name:     "a GPU type's devices are replaced, several sets",
			overlays: []*v1alpha1.NodeOverlay{newOverlay("mixed", 1, xlarge, devices(`[{"driver":"gpu.nvidia.com","model":"l4","count":1},{"driver":"neuron.aws.com","model":"inferentia2","count":2}]`))},
			want:     "m5.xlarge=gpu.nvidia.com/l4×1,m5.xlarge=neuron.aws.com/inferentia2×2",
		},
		{
			name:     "an empty list removes them",
			overlays: []*v1alpha1.NodeOverlay{newOverlay("none", 1, devices(`[]`))},
			want:     "",
		},
		{
			name:     "the NodePool's overlay only",
			nodePool: "other",
			overlays: []*v1alpha1.NodeOverlay{newOverlay("pool", 1, requirement("karpenter.sh/nodepool", corev1.NodeSelectorOpIn, "default"), devices(`[]`))},
			want:     "m5.xlarge=gpu.nvidia.com/a10g×1",
		},
		{
			name:     "the higher weight wins",
			overlays: []*v1alpha1.NodeOverlay{newOverlay("a-low", 10, devices(`[]`)), newOverlay("z-high", 50, xlarge, devices(b200))},
			want:     "m5.xlarge=gpu.nvidia.com/b200×2",
		},
		{
			name:     "devices and prices of different overlays merge",
			overlays: []*v1alpha1.NodeOverlay{newOverlay("price", 10, price("0.5")), newOverlay("devices", 10, large, devices(b200))},
			want:     "m5.large=gpu.nvidia.com/b200×2,m5.xlarge=gpu.nvidia.com/a10g×1",
		},
		{
			name:      "same weight, different devices: the first name wins, the other conflicts",
			overlays:  []*v1alpha1.NodeOverlay{newOverlay("b", 10, xlarge, devices(`[]`)), newOverlay("a", 10, devices(b200))},
			want:      "m5.large=gpu.nvidia.com/b200×2,m5.xlarge=gpu.nvidia.com/b200×2,c5.large=gpu.nvidia.com/b200×2",
			conflicts: map[string]string{"b": "conflict with overlay a (devices"},
		},
		{
			name:     "same weight, same devices: no conflict",
			overlays: []*v1alpha1.NodeOverlay{newOverlay("b", 10, xlarge, devices(b200)), newOverlay("a", 10, devices(b200))},
			want:     "m5.large=gpu.nvidia.com/b200×2,m5.xlarge=gpu.nvidia.com/b200×2,c5.large=gpu.nvidia.com/b200×2",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewNodeOverlays()
			for _, o := range tt.overlays {
				s.Set(o)
			}
			if invalid := s.Invalid(); len(invalid) > 0 {
				t.Fatalf("invalid overlays: %v", invalid)
			}
			nodePool := cmp.Or(tt.nodePool, "default")
			base := deviceCatalog()
			got := s.Apply(nodePool, base)
			if d := describeDevices(got); d != tt.want {
				t.Errorf("devices = %q, want %q", d, tt.want)
			}
			if d := describeDevices(base); d != "m5.xlarge=gpu.nvidia.com/a10g×1" {
				t.Errorf("the provider's types changed: %q", d)
			}
			for _, it := range got {
				if it.VolumeLimits[EBSCSIDriver] != 26 {
					t.Errorf("%s lost its attach limit: %v", it.Name, it.VolumeLimits)
				}
			}
			conflicts := s.Conflicts(nodePool)
			if len(conflicts) != len(tt.conflicts) {
				t.Errorf("conflicts = %v, want %v", conflicts, tt.conflicts)
			}
			for name, prefix := range tt.conflicts {
				if !strings.HasPrefix(conflicts[name], prefix) {
					t.Errorf("conflict of %s = %q, want it to start with %q", name, conflicts[name], prefix)
				}
			}
		})
	}
}

// TestOverlayDevicesInvalid: an annotation that is not a list of device sets makes the overlay
// invalid, naming the annotation, and it is not applied (none of its fields).
func TestOverlayDevicesInvalid(t *testing.T) {
	for _, value := range []string{
		``, `null`, `{}`, `[{"driver":"gpu.nvidia.com","model":"a10g","count":1}`, `[] []`,
		`[{"driver":"gpu.nvidia.com","model":"a10g","count":"1"}]`,
		`[{"driver":"gpu.nvidia.com","modle":"a10g","count":1}]`,
		`[{"model":"a10g","count":1}]`,
		`[{"driver":"gpu.nvidia.com","model":"a10g","count":0}]`,
		`[{"driver":"gpu.nvidia.com","model":"a10g","count":1,"memoryMiB":-1}]`,
	} {
		t.Run(value, func(t *testing.T) {
			s := NewNodeOverlays()
			s.Set(newOverlay("bad", 1, price("0.5"), devices(value)))
			if err := s.Invalid()["bad"]; err == nil || !strings.Contains(err.Error(), "annotation "+DevicesAnnotationKey) {
				t.Errorf("invalid = %v, want an error naming the annotation %s", err, DevicesAnnotationKey)
			}
			base := deviceCatalog()
			got := s.Apply("default", base)
			if describeDevices(got) != describeDevices(base) || changedPrices(base, got) != "" {
				t.Errorf("the invalid overlay was applied")
			}
		})
	}
}

// TestNodeOverlaysFollowTheDevicesAnnotation: the API server leaves the generation alone when
// only an annotation changes; the set still applies the new devices.
func TestNodeOverlaysFollowTheDevicesAnnotation(t *testing.T) {
	s := NewNodeOverlays()
	base := deviceCatalog()
	o := newOverlay("o", 1, requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.xlarge"), devices(`[]`))
	o.UID, o.Generation = "uid-o", 1
	s.Set(o)
	if d := describeDevices(s.Apply("default", base)); d != "" {
		t.Fatalf("devices = %q, want none", d)
	}
	changed := o.DeepCopy()
	changed.Annotations[DevicesAnnotationKey] = `[{"driver":"gpu.nvidia.com","model":"l4","count":1}]`
	if !OverlayChanged(o, changed) {
		t.Errorf("OverlayChanged = false for a new devices annotation")
	}
	s.Set(changed)
	if d := describeDevices(s.Apply("default", base)); d != "m5.xlarge=gpu.nvidia.com/l4×1" {
		t.Errorf("after the annotation changed: devices = %q, want the l4", d)
	}
	removed := changed.DeepCopy()
	delete(removed.Annotations, DevicesAnnotationKey)
	s.Set(removed)
	if d := describeDevices(s.Apply("default", base)); d != "m5.xlarge=gpu.nvidia.com/a10g×1" {
		t.Errorf("after the annotation was removed: devices = %q, want the catalog's", d)
	}
	if OverlayChanged(removed, removed.DeepCopy()) {
		t.Errorf("OverlayChanged = true for the same overlay")
	}
}
