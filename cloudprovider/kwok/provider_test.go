package kwok

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/apis/karpenter/v1alpha1"
	kwokv1alpha1 "github.com/joinery-dev/joinery/apis/kwok/v1alpha1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/kwok/catalog"
)

// testCatalog has three types with hand-picked prices:
//
//	small  2 cpu / 4 GiB   spot a 0.02, spot b 0.03, on-demand a,b 0.10, on-demand c unavailable
//	big    8 cpu / 32 GiB  spot a 0.05, on-demand a 0.40
//	arm    2 cpu / 4 GiB   spot b 0.01 (cheapest of all), arm64, linux only
//	rsv    2 cpu / 4 GiB   reserved c (cr-1, capacity 1) 0.50, on-demand c 0.60
const testCatalog = `{"instanceTypes": [
{"name": "small", "arch": "amd64", "operatingSystems": ["linux", "windows"], "cpu": 2, "memoryMiB": 4096, "pods": 29,
 "labels": {"karpenter.k8s.aws/instance-family": "s1"},
 "offerings": [{"zone": "a", "capacityType": "spot", "price": 0.02}, {"zone": "b", "capacityType": "spot", "price": 0.03},
  {"zone": "a", "capacityType": "on-demand", "price": 0.10}, {"zone": "b", "capacityType": "on-demand", "price": 0.10},
  {"zone": "c", "capacityType": "on-demand", "price": 0.10, "unavailable": true}]},
{"name": "big", "arch": "amd64", "operatingSystems": ["linux", "windows"], "cpu": 8, "memoryMiB": 32768, "pods": 58,
 "labels": {"karpenter.k8s.aws/instance-family": "b1"},
 "offerings": [{"zone": "a", "capacityType": "spot", "price": 0.05}, {"zone": "a", "capacityType": "on-demand", "price": 0.40}]},
{"name": "arm", "arch": "arm64", "operatingSystems": ["linux"], "cpu": 2, "memoryMiB": 4096, "pods": 29,
 "offerings": [{"zone": "b", "capacityType": "spot", "price": 0.01}]},
{"name": "rsv", "arch": "amd64", "operatingSystems": ["linux"], "cpu": 2, "memoryMiB": 4096, "pods": 29,
 "offerings": [{"zone": "c", "capacityType": "reserved", "price": 0.50, "reservationID": "cr-1", "reservationCapacity": 1},
  {"zone": "c", "capacityType": "on-demand", "price": 0.60}]}
]}`

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, kwokv1alpha1.AddToScheme, karpv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return scheme
}

func readyClass(name string) *kwokv1alpha1.KWOKNodeClass {
	return &kwokv1alpha1.KWOKNodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: kwokv1alpha1.KWOKNodeClassStatus{Conditions: []metav1.Condition{{
			Type: kwokv1alpha1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now(),
		}}},
	}
}

func newTestProvider(t *testing.T, objs ...client.Object) (*CloudProvider, client.Client) {
	t.Helper()
	f, err := catalog.Parse([]byte(testCatalog))
	if err != nil {
		t.Fatal(err)
	}
	its, err := f.Build(catalog.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(append([]client.Object{readyClass("default")}, objs...)...).Build()
	return NewWithInstanceTypes(c, its), c
}

func nodeClassRef(name string) *karpv1.NodeClassReference {
	return &karpv1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: kwokv1alpha1.KWOKNodeClassKind, Name: name}
}

func requirement(key string, op corev1.NodeSelectorOperator, values ...string) karpv1.NodeSelectorRequirementWithMinValues {
	return karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values}
}

func newNodeClaim(name string, reqs ...karpv1.NodeSelectorRequirementWithMinValues) *karpv1.NodeClaim {
	return &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}},
		Spec: karpv1.NodeClaimSpec{
			Requirements: append([]karpv1.NodeSelectorRequirementWithMinValues{requirement(karpv1.NodePoolLabelKey, corev1.NodeSelectorOpIn, "default")}, reqs...),
			NodeClassRef: nodeClassRef("default"),
		},
	}
}

func TestCreateNode(t *testing.T) {
	ctx := context.Background()
	p, c := newTestProvider(t)
	nc := newNodeClaim("default-abc12",
		requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"),
		requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "spot", "on-demand"),
		requirement("team", corev1.NodeSelectorOpIn, "payments"),
	)
	nc.Labels["example.com/owner"] = "me"
	nc.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "payments", Effect: corev1.TaintEffectNoSchedule}}
	nc.Spec.StartupTaints = []corev1.Taint{{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoSchedule}}

	got, err := p.Create(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	var node corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: "default-abc12"}, &node); err != nil {
		t.Fatal(err)
	}
	if node.Annotations[KwokNodeAnnotation] != "fake" || node.Spec.ProviderID != "kwok://default-abc12" {
		t.Errorf("node annotations %v, provider ID %q", node.Annotations, node.Spec.ProviderID)
	}
	wantLabels := map[string]string{
		corev1.LabelInstanceTypeStable: "small", // cheapest amd64 offering: spot in a
		corev1.LabelTopologyZone:       "a",
		karpv1.CapacityTypeLabelKey:    "spot",
		corev1.LabelArchStable:         "amd64",
		corev1.LabelOSStable:           "linux",
		corev1.LabelHostname:           "default-abc12",
		karpv1.NodePoolLabelKey:        "default",
		awsv1.LabelInstanceFamily:      "s1",
		awsv1.LabelInstanceCPU:         "2",
		"team":                         "payments",
		"example.com/owner":            "me",
		// The aliases a real node carries.
		corev1.LabelFailureDomainBetaZone: "a",
		"topology.ebs.csi.aws.com/zone":   "a",
		corev1.LabelInstanceType:          "small",
		"beta.kubernetes.io/arch":         "amd64",
		"beta.kubernetes.io/os":           "linux",
	}
	for k, v := range wantLabels {
		if node.Labels[k] != v {
			t.Errorf("node label %s = %q, want %q", k, node.Labels[k], v)
		}
	}
	if _, ok := node.Labels[awsv1.LabelCapacityReservationID]; ok {
		t.Error("a spot node has a capacity reservation label")
	}
	wantTaints := []string{"dedicated", "example.com/agent-not-ready", karpv1.UnregisteredTaintKey}
	if len(node.Spec.Taints) != len(wantTaints) {
		t.Fatalf("taints = %v, want keys %v", node.Spec.Taints, wantTaints)
	}
	for i, key := range wantTaints {
		if node.Spec.Taints[i].Key != key {
			t.Errorf("taint %d = %v, want key %s", i, node.Spec.Taints[i], key)
		}
	}
	if node.Spec.Taints[2].Effect != corev1.TaintEffectNoExecute {
		t.Errorf("unregistered taint effect = %s, want NoExecute", node.Spec.Taints[2].Effect)
	}
	// 2 cpu − 70m; 4096Mi − ⌈307.2⌉Mi − 574Mi − 100Mi.
	wantAllocatable := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1930m"), corev1.ResourceMemory: resource.MustParse("3114Mi"), corev1.ResourcePods: resource.MustParse("29")}
	for name, want := range wantAllocatable {
		if q := node.Status.Allocatable[name]; q.Cmp(want) != 0 {
			t.Errorf("node allocatable %s = %s, want %s", name, q.String(), want.String())
		}
	}

	if got.Status.ProviderID != "kwok://default-abc12" || got.Status.ImageID != "kwok-linux-amd64" {
		t.Errorf("returned provider ID %q, image ID %q", got.Status.ProviderID, got.Status.ImageID)
	}
	if got.Labels[corev1.LabelInstanceTypeStable] != "small" || got.Labels[corev1.LabelTopologyZone] != "a" || got.Labels[karpv1.CapacityTypeLabelKey] != "spot" {
		t.Errorf("returned labels = %v", got.Labels)
	}
	for _, key := range []string{corev1.LabelHostname, corev1.LabelFailureDomainBetaZone, "beta.kubernetes.io/arch"} {
		if _, ok := got.Labels[key]; ok {
			t.Errorf("returned nodeclaim carries the node's label %s", key)
		}
	}
	if q := got.Status.Allocatable[corev1.ResourceMemory]; q.Cmp(resource.MustParse("3114Mi")) != 0 {
		t.Errorf("returned allocatable memory = %s", q.String())
	}
	if nc.Status.ProviderID != "" || nc.Labels[corev1.LabelInstanceTypeStable] != "" {
		t.Error("Create modified its input")
	}
}

func TestCreateChoosesOffering(t *testing.T) {
	tests := []struct {
		name                     string
		reqs                     []karpv1.NodeSelectorRequirementWithMinValues
		requests                 corev1.ResourceList
		wantType, wantZone       string
		wantCapacityType, wantOS string
	}{
		{
			name:     "cheapest of spot and on-demand",
			reqs:     []karpv1.NodeSelectorRequirementWithMinValues{requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "spot", "on-demand")},
			wantType: "arm", wantZone: "b", wantCapacityType: "spot", wantOS: "linux",
		},
		{
			name:     "instance type list",
			reqs:     []karpv1.NodeSelectorRequirementWithMinValues{requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "small", "big")},
			wantType: "small", wantZone: "a", wantCapacityType: "spot", wantOS: "linux",
		},
		{
			name:     "zone",
			reqs:     []karpv1.NodeSelectorRequirementWithMinValues{requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "a")},
			wantType: "small", wantZone: "a", wantCapacityType: "spot", wantOS: "linux",
		},
		{
			name: "on-demand only",
			reqs: []karpv1.NodeSelectorRequirementWithMinValues{
				requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "on-demand"),
				requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpNotIn, "a"),
			},
			wantType: "small", wantZone: "b", wantCapacityType: "on-demand", wantOS: "linux",
		},
		{
			name:     "reserved before on-demand",
			reqs:     []karpv1.NodeSelectorRequirementWithMinValues{requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "c")},
			wantType: "rsv", wantZone: "c", wantCapacityType: "reserved", wantOS: "linux",
		},
		{
			name:     "requests rule out small types",
			requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3"), corev1.ResourceMemory: resource.MustParse("8Gi")},
			wantType: "big", wantZone: "a", wantCapacityType: "spot", wantOS: "linux",
		},
		{
			name:     "windows",
			reqs:     []karpv1.NodeSelectorRequirementWithMinValues{requirement(corev1.LabelOSStable, corev1.NodeSelectorOpIn, "windows")},
			wantType: "small", wantZone: "a", wantCapacityType: "spot", wantOS: "windows",
		},
		{
			name:     "excluded family",
			reqs:     []karpv1.NodeSelectorRequirementWithMinValues{requirement(awsv1.LabelInstanceFamily, corev1.NodeSelectorOpIn, "b1")},
			wantType: "big", wantZone: "a", wantCapacityType: "spot", wantOS: "linux",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := newTestProvider(t)
			nc := newNodeClaim("nc", tt.reqs...)
			nc.Spec.Resources.Requests = tt.requests
			got, err := p.Create(context.Background(), nc)
			if err != nil {
				t.Fatal(err)
			}
			l := got.Labels
			if l[corev1.LabelInstanceTypeStable] != tt.wantType || l[corev1.LabelTopologyZone] != tt.wantZone || l[karpv1.CapacityTypeLabelKey] != tt.wantCapacityType || l[corev1.LabelOSStable] != tt.wantOS {
				t.Errorf("launched %s in %s as %s on %s, want %s in %s as %s on %s",
					l[corev1.LabelInstanceTypeStable], l[corev1.LabelTopologyZone], l[karpv1.CapacityTypeLabelKey], l[corev1.LabelOSStable],
					tt.wantType, tt.wantZone, tt.wantCapacityType, tt.wantOS)
			}
		})
	}
}

func TestCreateInsufficientCapacity(t *testing.T) {
	tests := []struct {
		name     string
		reqs     []karpv1.NodeSelectorRequirementWithMinValues
		requests corev1.ResourceList
	}{
		{name: "unknown zone", reqs: []karpv1.NodeSelectorRequirementWithMinValues{requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "nowhere")}},
		{
			name: "only an unavailable offering",
			reqs: []karpv1.NodeSelectorRequirementWithMinValues{
				requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "small"),
				requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "c"),
			},
		},
		{name: "nothing fits", requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}},
		{name: "no GPU types", reqs: []karpv1.NodeSelectorRequirementWithMinValues{requirement(awsv1.LabelInstanceGPUCount, corev1.NodeSelectorOpExists)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, c := newTestProvider(t)
			nc := newNodeClaim("nc", tt.reqs...)
			nc.Spec.Resources.Requests = tt.requests
			_, err := p.Create(context.Background(), nc)
			if !cloudprovider.IsInsufficientCapacityError(err) {
				t.Fatalf("Create() error = %v, want insufficient capacity", err)
			}
			var nodes corev1.NodeList
			if err := c.List(context.Background(), &nodes); err != nil || len(nodes.Items) != 0 {
				t.Errorf("nodes after a failed launch: %d (%v)", len(nodes.Items), err)
			}
		})
	}
}

func TestCreateExhaustsReservation(t *testing.T) {
	ctx := context.Background()
	p, _ := newTestProvider(t)
	inZoneC := requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "c")
	first, err := p.Create(ctx, newNodeClaim("first", inZoneC))
	if err != nil {
		t.Fatal(err)
	}
	if first.Labels[karpv1.CapacityTypeLabelKey] != "reserved" || first.Labels[awsv1.LabelCapacityReservationID] != "cr-1" {
		t.Fatalf("first launch labels = %v, want reserved in cr-1", first.Labels)
	}
	second, err := p.Create(ctx, newNodeClaim("second", inZoneC))
	if err != nil {
		t.Fatal(err)
	}
	if second.Labels[karpv1.CapacityTypeLabelKey] != "on-demand" || second.Labels[corev1.LabelInstanceTypeStable] != "rsv" {
		t.Errorf("second launch labels = %v, want rsv on-demand once the reservation is used", second.Labels)
	}
	_, err = p.Create(ctx, newNodeClaim("third", inZoneC, requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "reserved")))
	if !cloudprovider.IsInsufficientCapacityError(err) {
		t.Errorf("reserved-only launch with the reservation used: error = %v, want insufficient capacity", err)
	}
}

func TestCreateIsIdempotent(t *testing.T) {
	ctx := context.Background()
	p, _ := newTestProvider(t)
	first, err := p.Create(ctx, newNodeClaim("nc"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := p.Create(ctx, newNodeClaim("nc"))
	if err != nil {
		t.Fatal(err)
	}
	if again.Status.ProviderID != first.Status.ProviderID || again.Labels[corev1.LabelInstanceTypeStable] != first.Labels[corev1.LabelInstanceTypeStable] {
		t.Errorf("second Create = %v, want the first launch %v", again.Status, first.Status)
	}
}

func TestCreateRefusesForeignNode(t *testing.T) {
	foreign := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "nc"}}
	p, _ := newTestProvider(t, foreign)
	_, err := p.Create(context.Background(), newNodeClaim("nc"))
	if _, ok := cloudprovider.AsCreateError(err); !ok {
		t.Errorf("Create() over a foreign node: error = %v, want a CreateError", err)
	}
}

func TestNodeClassChecks(t *testing.T) {
	notReady := readyClass("broken")
	notReady.Status.Conditions[0].Status = metav1.ConditionFalse
	notReady.Status.Conditions[0].Reason = "Broken"
	tests := []struct {
		name         string
		ref          *karpv1.NodeClassReference
		wantNotReady bool
	}{
		{name: "missing", ref: nodeClassRef("absent"), wantNotReady: true},
		{name: "not ready", ref: nodeClassRef("broken"), wantNotReady: true},
		{name: "other provider's kind", ref: &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}},
		{name: "no reference"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := newTestProvider(t, notReady)
			nc := newNodeClaim("nc")
			nc.Spec.NodeClassRef = tt.ref
			_, createErr := p.Create(context.Background(), nc)
			pool := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "pool"}}
			pool.Spec.Template.Spec.NodeClassRef = tt.ref
			_, typesErr := p.GetInstanceTypes(context.Background(), pool)
			for what, err := range map[string]error{"Create": createErr, "GetInstanceTypes": typesErr} {
				if err == nil {
					t.Errorf("%s succeeded", what)
				} else if cloudprovider.IsNodeClassNotReadyError(err) != tt.wantNotReady {
					t.Errorf("%s error = %v, want node class not ready %v", what, err, tt.wantNotReady)
				}
			}
		})
	}
}

func TestGetInstanceTypes(t *testing.T) {
	p, _ := newTestProvider(t)
	pool := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "pool"}}
	pool.Spec.Template.Spec.NodeClassRef = nodeClassRef("default")
	its, err := p.GetInstanceTypes(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(its) != 4 {
		t.Errorf("GetInstanceTypes() returned %d types, want 4", len(its))
	}
	all, err := p.GetInstanceTypes(context.Background(), nil)
	if err != nil || len(all) != 4 {
		t.Errorf("GetInstanceTypes(nil) = %d types, %v", len(all), err)
	}
}

func TestGetListDelete(t *testing.T) {
	ctx := context.Background()
	unmanaged := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "real-node"}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-west-2a/i-123"}}
	p, c := newTestProvider(t, unmanaged)
	var launched []*karpv1.NodeClaim
	for _, name := range []string{"one", "two"} {
		nc, err := p.Create(ctx, newNodeClaim(name))
		if err != nil {
			t.Fatal(err)
		}
		launched = append(launched, nc)
	}

	got, err := p.Get(ctx, "kwok://one")
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "one" || got.Status.NodeName != "one" || got.Status.ProviderID != "kwok://one" || got.Labels[corev1.LabelInstanceTypeStable] != launched[0].Labels[corev1.LabelInstanceTypeStable] {
		t.Errorf("Get() = %+v", got)
	}
	if q := got.Status.Allocatable[corev1.ResourceCPU]; q.Cmp(launched[0].Status.Allocatable[corev1.ResourceCPU]) != 0 {
		t.Errorf("Get() allocatable cpu = %s", q.String())
	}
	for _, id := range []string{"kwok://absent", "aws:///us-west-2a/i-123", "kwok://real-node", "kwok://"} {
		if _, err := p.Get(ctx, id); !cloudprovider.IsNodeClaimNotFoundError(err) {
			t.Errorf("Get(%q) error = %v, want not found", id, err)
		}
	}

	list, err := p.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Errorf("List() = %d nodeclaims, want the 2 kwok nodes", len(list))
	}

	if err := p.Delete(ctx, launched[0]); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "one"}, &corev1.Node{}); err == nil {
		t.Error("node still exists after Delete")
	}
	if _, err := p.Get(ctx, "kwok://one"); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Get after Delete: error = %v, want not found", err)
	}
	if err := p.Delete(ctx, launched[0]); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("second Delete: error = %v, want not found", err)
	}
	if err := p.Delete(ctx, newNodeClaim("never-launched")); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Delete without provider ID: error = %v, want not found", err)
	}
	if list, _ := p.List(ctx); len(list) != 1 || list[0].Name != "two" {
		t.Errorf("List() after Delete = %v", list)
	}
}

func TestNew(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(newScheme(t)).Build()
	p, err := New(c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.instanceTypes) < 150 || p.Name() != "kwok" {
		t.Errorf("default provider: %d types, name %q", len(p.instanceTypes), p.Name())
	}
	if classes := p.GetSupportedNodeClasses(); len(classes) != 1 {
		t.Errorf("GetSupportedNodeClasses() = %v", classes)
	} else if _, ok := classes[0].(*kwokv1alpha1.KWOKNodeClass); !ok {
		t.Errorf("GetSupportedNodeClasses() = %T, want a KWOKNodeClass", classes[0])
	}
	if reason, err := p.IsDrifted(context.Background(), newNodeClaim("nc")); reason != "" || err != nil {
		t.Errorf("IsDrifted() = %q, %v", reason, err)
	}
	if len(p.RepairPolicies()) == 0 {
		t.Error("no repair policies")
	}

	path := filepath.Join(t.TempDir(), "catalog.json")
	if err := os.WriteFile(path, []byte(testCatalog), 0o600); err != nil {
		t.Fatal(err)
	}
	fromFile, err := New(c, Options{CatalogPath: path})
	if err != nil {
		t.Fatal(err)
	}
	if len(fromFile.instanceTypes) != 4 {
		t.Errorf("provider from %s has %d types, want 4", path, len(fromFile.instanceTypes))
	}
	if _, err := New(c, Options{CatalogPath: filepath.Join(t.TempDir(), "missing.json")}); err == nil {
		t.Error("New with a missing catalog succeeded")
	}
}

// TestCreateWithDefaultCatalog launches a GPU node from the embedded catalog, end to end.
func TestCreateWithDefaultCatalog(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(readyClass("default")).Build()
	p, err := New(c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	nc := newNodeClaim("gpu", requirement(awsv1.LabelInstanceGPUName, corev1.NodeSelectorOpIn, "a10g"))
	nc.Spec.Resources.Requests = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")}
	got, err := p.Create(context.Background(), nc)
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels[corev1.LabelInstanceTypeStable] != "g5.12xlarge" || got.Labels[karpv1.CapacityTypeLabelKey] != "spot" {
		t.Errorf("launched %s as %s, want g5.12xlarge (the only A10G type with more than one GPU) on spot",
			got.Labels[corev1.LabelInstanceTypeStable], got.Labels[karpv1.CapacityTypeLabelKey])
	}
	if q := got.Status.Capacity["nvidia.com/gpu"]; q.Value() != 4 {
		t.Errorf("nvidia.com/gpu capacity = %s, want 4", q.String())
	}
}

// TestCreateWithOverlay: the overlay's prices decide the launch and its capacity reaches the
// Node, per NodePool, and GetInstanceTypes shows the same catalog.
func TestCreateWithOverlay(t *testing.T) {
	ctx := context.Background()
	overlays := cloudprovider.NewNodeOverlays()
	overlays.Set(&v1alpha1.NodeOverlay{
		ObjectMeta: metav1.ObjectMeta{Name: "big-is-cheap"},
		Spec: v1alpha1.NodeOverlaySpec{
			Requirements: []v1alpha1.NodeSelectorRequirement{
				{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"big"}},
				{Key: karpv1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"default"}},
			},
			Price:    ptr.To("0.001"),
			Capacity: corev1.ResourceList{"hugepages-2Mi": resource.MustParse("1Gi")},
		},
	})
	f, err := catalog.Parse([]byte(testCatalog))
	if err != nil {
		t.Fatal(err)
	}
	its, err := f.Build(catalog.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(readyClass("default")).Build()
	p := NewWithOverlay(c, its, overlays)

	nc := newNodeClaim("cheap-big", requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "spot"))
	nc.Spec.Resources.Requests = corev1.ResourceList{"hugepages-2Mi": resource.MustParse("512Mi")}
	got, err := p.Create(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if typ := got.Labels[corev1.LabelInstanceTypeStable]; typ != "big" {
		t.Errorf("launched %s, want big (0.001 by the overlay, cheaper than arm's 0.01)", typ)
	}
	var node corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: "cheap-big"}, &node); err != nil {
		t.Fatal(err)
	}
	if q := node.Status.Allocatable["hugepages-2Mi"]; q.Cmp(resource.MustParse("1Gi")) != 0 {
		t.Errorf("node allocatable hugepages-2Mi = %s, want 1Gi from the overlay", q.String())
	}

	other := newNodeClaim("other-pool", requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "spot"))
	other.Labels[karpv1.NodePoolLabelKey] = "other"
	other.Spec.Requirements[0] = requirement(karpv1.NodePoolLabelKey, corev1.NodeSelectorOpIn, "other")
	if got, err := p.Create(ctx, other); err != nil {
		t.Fatal(err)
	} else if typ := got.Labels[corev1.LabelInstanceTypeStable]; typ != "arm" {
		t.Errorf("NodePool other launched %s, want arm: the overlay selects NodePool default only", typ)
	}

	listed, err := p.GetInstanceTypes(ctx, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{NodeClassRef: nodeClassRef("default")}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range listed {
		if it.Name == "big" && it.Offerings.Cheapest().Price != 0.001 {
			t.Errorf("GetInstanceTypes shows big at %v, want the overlay's 0.001", it.Offerings.Cheapest().Price)
		}
	}
}

// TestReservedCapacityGate: with Karpenter's ReservedCapacity gate off, the catalog's capacity
// reservation is neither listed (so nothing plans or prices with it) nor launched into.
func TestReservedCapacityGate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "catalog.yaml")
	if err := os.WriteFile(path, []byte(testCatalog), 0o644); err != nil {
		t.Fatal(err)
	}
	inZoneC := requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "c")
	onlyReserved := requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeReserved)
	for _, tt := range []struct {
		name         string
		disable      bool
		wantReserved bool
	}{
		{"gate on (Karpenter's default): the reservation is used", false, true},
		{"gate off: no reserved offering", true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(readyClass("default")).Build()
			p, err := New(c, Options{CatalogPath: path, DisableReservedCapacity: tt.disable})
			if err != nil {
				t.Fatal(err)
			}
			its, err := p.GetInstanceTypes(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var reserved int
			for _, it := range its {
				for _, o := range it.Offerings {
					if o.CapacityType() == karpv1.CapacityTypeReserved {
						reserved++
					}
				}
				if !tt.wantReserved && it.Requirements.Get(karpv1.CapacityTypeLabelKey).Has(karpv1.CapacityTypeReserved) {
					t.Errorf("%s: capacity types %v offer reserved with the gate off", it.Name, it.Requirements.Get(karpv1.CapacityTypeLabelKey).Values())
				}
			}
			if (reserved > 0) != tt.wantReserved {
				t.Errorf("%d reserved offerings listed, want reserved = %t", reserved, tt.wantReserved)
			}
			launched, err := p.Create(ctx, newNodeClaim("first", inZoneC))
			if err != nil {
				t.Fatal(err)
			}
			want := karpv1.CapacityTypeOnDemand
			if tt.wantReserved {
				want = karpv1.CapacityTypeReserved
			}
			if got := launched.Labels[karpv1.CapacityTypeLabelKey]; got != want {
				t.Errorf("launch in zone c took %s, want %s", got, want)
			}
			if tt.disable {
				if _, err := p.Create(ctx, newNodeClaim("reserved-only", inZoneC, onlyReserved)); !cloudprovider.IsInsufficientCapacityError(err) {
					t.Errorf("reserved-only launch with the gate off: error = %v, want insufficient capacity", err)
				}
			}
		})
	}
}

// recordedUnavailable is an UnavailableSource over a fixed record.
type recordedUnavailable map[cloudprovider.OfferingKey]time.Time

func (r recordedUnavailable) Unavailable(context.Context) (map[cloudprovider.OfferingKey]time.Time, error) {
	return r, nil
}

// TestCreateSkipsRecordedUnavailable: offerings in the cluster's unavailable record are out of
// capacity for the emulator too: spot recorded exhausted launches on-demand when the NodeClaim
// allows it, and fails with insufficient capacity naming the recorded offerings when it is
// pinned to spot.
func TestCreateSkipsRecordedUnavailable(t *testing.T) {
	until := time.Now().Add(time.Hour)
	record := recordedUnavailable{
		{CapacityType: "spot", InstanceType: "small", Zone: "a"}: until,
		{CapacityType: "spot", InstanceType: "small", Zone: "b"}: until,
	}
	onlySmall := requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "small")
	ctx := context.Background()
	p, _ := newTestProvider(t)
	p.unavailable = record
	got, err := p.Create(ctx, newNodeClaim("either", onlySmall, requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "spot", "on-demand")))
	if err != nil {
		t.Fatal(err)
	}
	if ct := got.Labels[karpv1.CapacityTypeLabelKey]; ct != "on-demand" {
		t.Errorf("launched %s with spot recorded unavailable, want on-demand", ct)
	}
	_, err = p.Create(ctx, newNodeClaim("spot", onlySmall, requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "spot")))
	if !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("spot-only launch with spot recorded unavailable: error = %v, want insufficient capacity", err)
	}
	if refused := cloudprovider.RefusedOfferings(err); len(refused) != 2 {
		t.Errorf("refused offerings %v, want the two recorded", refused)
	}
}
