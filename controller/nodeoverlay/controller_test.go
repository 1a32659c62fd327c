package nodeoverlay

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/joinery-dev/joinery/apis"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/apis/karpenter/v1alpha1"
	kwokv1alpha1 "github.com/joinery-dev/joinery/apis/kwok/v1alpha1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/kwok"
	"github.com/joinery-dev/joinery/cloudprovider/kwok/catalog"
)

const testCatalog = `{"instanceTypes": [
{"name": "small", "arch": "amd64", "operatingSystems": ["linux"], "cpu": 2, "memoryMiB": 4096, "pods": 29,
 "offerings": [{"zone": "a", "capacityType": "on-demand", "price": 0.10}]},
{"name": "big", "arch": "amd64", "operatingSystems": ["linux"], "cpu": 8, "memoryMiB": 32768, "pods": 58,
 "offerings": [{"zone": "a", "capacityType": "on-demand", "price": 0.40}]}
]}`

func overlay(name string, weight int32, instanceType string, mutate func(*v1alpha1.NodeOverlaySpec)) *v1alpha1.NodeOverlay {
	o := &v1alpha1.NodeOverlay{
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1},
		Spec: v1alpha1.NodeOverlaySpec{
			Weight:       ptr.To(weight),
			Requirements: []v1alpha1.NodeSelectorRequirement{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{instanceType}}},
		},
	}
	mutate(&o.Spec)
	return o
}

func withPrice(p string) func(*v1alpha1.NodeOverlaySpec) {
	return func(s *v1alpha1.NodeOverlaySpec) { s.Price = ptr.To(p) }
}

// TestReconcileConditions: overlays that conflict on a field at the same weight leave the
// alphabetically later one Ready=False (Conflict, naming the winner, with an event); the
// others are Ready=True; an unparsable one is Invalid. The provider's catalog shows the
// winners' values meanwhile, and a fix clears the conflict.
func TestReconcileConditions(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apis.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	class := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Status: kwokv1alpha1.KWOKNodeClassStatus{Conditions: []metav1.Condition{{
		Type: kwokv1alpha1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now(),
	}}}}
	pool := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	pool.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: kwokv1alpha1.KWOKNodeClassKind, Name: "default"}
	objs := []client.Object{class, pool,
		overlay("alpha", 10, "small", withPrice("0.01")),
		overlay("beta", 10, "small", withPrice("0.02")),
		overlay("gamma", 20, "big", func(s *v1alpha1.NodeOverlaySpec) {
			s.Capacity = corev1.ResourceList{"hugepages-2Mi": resource.MustParse("1Gi")}
		}),
		overlay("broken", 10, "big", func(s *v1alpha1.NodeOverlaySpec) { s.PriceAdjustment = ptr.To("10%") }),
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&v1alpha1.NodeOverlay{}).Build()

	f, err := catalog.Parse([]byte(testCatalog))
	if err != nil {
		t.Fatal(err)
	}
	its, err := f.Build(catalog.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	overlays := cloudprovider.NewNodeOverlays()
	provider := kwok.NewWithOverlay(c, its, overlays)
	rec := events.NewFakeRecorder(10)
	ctrl := New(c, provider, overlays, rec, nil)

	if _, err := ctrl.Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		status  metav1.ConditionStatus
		reason  string
		message string
	}{
		"alpha":  {metav1.ConditionTrue, v1alpha1.ConditionReasonApplied, ""},
		"beta":   {metav1.ConditionFalse, v1alpha1.ConditionReasonConflict, "conflict with overlay alpha"},
		"gamma":  {metav1.ConditionTrue, v1alpha1.ConditionReasonApplied, ""},
		"broken": {metav1.ConditionFalse, v1alpha1.ConditionReasonInvalid, "spec.priceAdjustment"},
	}
	for name, w := range want {
		var o v1alpha1.NodeOverlay
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &o); err != nil {
			t.Fatal(err)
		}
		cond := meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionTypeReady)
		if cond == nil || cond.Status != w.status || cond.Reason != w.reason || !strings.Contains(cond.Message, w.message) || cond.ObservedGeneration != 1 {
			t.Errorf("%s: Ready = %+v, want %s/%s containing %q", name, cond, w.status, w.reason, w.message)
		}
	}
	select {
	case e := <-rec.Events:
		if !strings.Contains(e, EventConflict) || !strings.Contains(e, "alpha") {
			t.Errorf("event %q, want %s naming alpha", e, EventConflict)
		}
	default:
		t.Errorf("no %s event", EventConflict)
	}

	listed, err := provider.GetInstanceTypes(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range listed {
		switch it.Name {
		case "small":
			if p := it.Offerings[0].Price; p != 0.01 {
				t.Errorf("small costs %v, want alpha's 0.01 (fail open: the winner applies)", p)
			}
		case "big":
			if q := it.Capacity["hugepages-2Mi"]; q.Cmp(resource.MustParse("1Gi")) != 0 {
				t.Errorf("big has hugepages-2Mi %s, want gamma's 1Gi", q.String())
			}
		}
	}

	// beta gives up its price: the conflict clears on the next pass.
	var beta v1alpha1.NodeOverlay
	if err := c.Get(ctx, client.ObjectKey{Name: "beta"}, &beta); err != nil {
		t.Fatal(err)
	}
	beta.Spec.Price = ptr.To("0.01")
	beta.Generation = 2
	if err := c.Update(ctx, &beta); err != nil {
		t.Fatal(err)
	}
	if _, err := ctrl.Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "beta"}, &beta); err != nil {
		t.Fatal(err)
	}
	if cond := meta.FindStatusCondition(beta.Status.Conditions, v1alpha1.ConditionTypeReady); cond == nil || cond.Status != metav1.ConditionTrue {
		t.Errorf("beta after agreeing with alpha: Ready = %+v, want True", cond)
	}
}
