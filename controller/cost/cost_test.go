package cost

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/joinery-dev/joinery/apis"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/scheduling"
)

type catalog cloudprovider.InstanceTypes

func (c catalog) GetInstanceTypes(context.Context, *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	return c, nil
}

func testCatalog() catalog {
	it := func(name string, cpu string, spot, onDemand float64) *cloudprovider.InstanceType {
		return &cloudprovider.InstanceType{
			Name: name,
			Requirements: scheduling.NewRequirements(
				scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, name),
				scheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-a", "zone-b"),
				scheduling.NewRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "spot", "on-demand"),
			),
			Offerings: cloudprovider.Offerings{
				cloudprovider.NewOffering("zone-a", "spot", spot, true), cloudprovider.NewOffering("zone-a", "on-demand", onDemand, true),
				cloudprovider.NewOffering("zone-b", "spot", spot, true), cloudprovider.NewOffering("zone-b", "on-demand", onDemand, true),
			},
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
		}
	}
	return catalog{it("small", "2", 0.1, 0.2), it("large", "8", 0.4, 0.8)}
}

// launched is a NodeClaim of pool running type in zone as capacity type ct, with its node.
func launched(name, pool, typ, zone, ct, allocCPU string) (*karpv1.NodeClaim, *corev1.Node) {
	labels := map[string]string{karpv1.NodePoolLabelKey: pool, corev1.LabelInstanceTypeStable: typ, corev1.LabelTopologyZone: zone, karpv1.CapacityTypeLabelKey: ct}
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Status: karpv1.NodeClaimStatus{NodeName: name}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(allocCPU), corev1.ResourceMemory: resource.MustParse("4Gi")}}}
	return nc, node
}

func pod(name, node, cpu string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{
		Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}},
	}}}}
}

func TestCompute(t *testing.T) {
	a, na := launched("a", "web", "small", "zone-a", "spot", "2")
	b, nb := launched("b", "web", "large", "zone-a", "spot", "8")
	c, nc := launched("c", "web", "small", "zone-b", "on-demand", "2")
	deleting, _ := launched("d", "web", "large", "zone-a", "spot", "8")
	deleting.DeletionTimestamp = &metav1.Time{}
	launching := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "e", Labels: map[string]string{karpv1.NodePoolLabelKey: "batch"}},
		Spec: karpv1.NodeClaimSpec{Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
			{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"large"}},
			{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}},
			{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-b"}},
		}}}
	lines, err := Compute(context.Background(), NewPricer(testCatalog(), nil), State{
		NodeClaims: []*karpv1.NodeClaim{a, b, c, deleting, launching},
		Nodes:      []*corev1.Node{na, nb, nc},
		Pods:       []*corev1.Pod{pod("p1", "a", "1"), pod("p2", "b", "4"), pod("pending", "", "8")},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []Line{
		{NodePool: "batch", CapacityType: "on-demand", Zone: "zone-b", NodeClaims: 1, PerHour: 0.8},
		{NodePool: "web", CapacityType: "on-demand", Zone: "zone-b", NodeClaims: 1, PerHour: 0.2, CPU: 0, Memory: 0},
		{NodePool: "web", CapacityType: "spot", Zone: "zone-a", NodeClaims: 2, PerHour: 0.5, CPU: 0.5, Memory: 0.25},
	}
	if len(lines) != len(want) {
		t.Fatalf("lines %+v, want %+v", lines, want)
	}
	for i := range want {
		got := lines[i]
		if got.NodePool != want[i].NodePool || got.CapacityType != want[i].CapacityType || got.Zone != want[i].Zone ||
			got.NodeClaims != want[i].NodeClaims || !near(got.PerHour, want[i].PerHour) || !near(got.CPU, want[i].CPU) || !near(got.Memory, want[i].Memory) {
			t.Errorf("line %d = %+v, want %+v", i, got, want[i])
		}
	}
}

func near(a, b float64) bool { d := a - b; return d < 1e-9 && d > -1e-9 }

// TestExport: the metrics carry Compute's lines, and Karpenter's NodePool cost is their sum
// per NodePool, 0 for a NodePool without NodeClaims, the launching NodeClaim included.
func TestExport(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apis.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	a, na := launched("a", "web", "large", "zone-a", "on-demand", "8")
	b, nb := launched("b", "web", "small", "zone-b", "spot", "2")
	launching := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{karpv1.NodePoolLabelKey: "web"}},
		Spec: karpv1.NodeClaimSpec{Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
			{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"small"}},
			{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}},
			{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-b"}},
		}}}
	// unknown runs a type the catalog does not have: it cannot be priced.
	unknown, nu := launched("u", "web", "huge", "zone-a", "on-demand", "8")
	unknown.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"huge"}}}
	web := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	idle := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "idle"}}
	errorsBefore := testutil.ToFloat64(costTrackerErrors.WithLabelValues("web"))
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects([]client.Object{web, idle, a, na, b, nb, launching, unknown, nu, pod("p", "a", "2")}...).Build()
	e := &Exporter{Client: c, InstanceTypes: testCatalog()}
	if err := e.Export(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(costPerHour.WithLabelValues("web", "on-demand", "zone-a")); !near(got, 0.8) {
		t.Errorf("joinery_nodepool_cost_per_hour = %v, want 0.8", got)
	}
	if got := testutil.ToFloat64(utilisation.WithLabelValues("web", "on-demand", "zone-a", "cpu")); !near(got, 0.25) {
		t.Errorf("joinery_nodepool_utilization{cpu} = %v, want 0.25", got)
	}
	for pool, want := range map[string]float64{"web": 0.8 + 0.1 + 0.2, "idle": 0} {
		if got := testutil.ToFloat64(nodePoolCost.WithLabelValues(pool)); !near(got, want) {
			t.Errorf("karpenter_nodepools_cost_total{nodepool=%q} = %v, want %v", pool, got, want)
		}
	}
	if got := testutil.ToFloat64(costTrackerErrors.WithLabelValues("web")) - errorsBefore; got != 1 {
		t.Errorf("karpenter_nodepools_cost_tracker_errors_total{nodepool=web} grew by %v, want 1 (the NodeClaim of an unknown type)", got)
	}
	if n := testutil.CollectAndCount(nodePoolCost); n != 2 {
		t.Errorf("karpenter_nodepools_cost_total has %d series, want 2", n)
	}
}
