package integration

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestStaticNodePoolValidation checks the schema's rules on spec.replicas, Karpenter's rules
// plus joinery's cap of 1000.
func TestStaticNodePoolValidation(t *testing.T) {
	cases := []rejection{
		{name: "replicas with weight", manifest: nodePoolManifest("sv-np-weight", karpSet("spec.replicas", "2"), karpSet("spec.weight", "10")),
			wantFields: []string{"'weight' is not supported on static NodePools"}},
		{name: "replicas with a cpu limit", manifest: nodePoolManifest("sv-np-cpu", karpSet("spec.replicas", "2"), karpSet("spec.limits", "{cpu: 10, nodes: 5}")),
			wantFields: []string{"only 'limits.nodes' is supported on static NodePools"}},
		{name: "negative replicas", manifest: nodePoolManifest("sv-np-neg", karpSet("spec.replicas", "-1")), wantFields: []string{"spec.replicas"}},
		{name: "replicas above 1000", manifest: nodePoolManifest("sv-np-1001", karpSet("spec.replicas", "1001")), wantFields: []string{"spec.replicas"}},
	}
	expectRejections(t, cases)
}

// TestStaticNodePoolModeIsFixed checks that a NodePool cannot become static, nor stop being
// static, once created.
func TestStaticNodePoolModeIsFixed(t *testing.T) {
	for _, tc := range []struct {
		name, manifest string
		edit           func(obj *unstructured.Unstructured)
	}{
		{name: "static to dynamic", manifest: nodePoolManifest("sv-np-to-dynamic", karpSet("spec.replicas", "3"), karpSet("spec.limits", "{nodes: 5}")),
			edit: func(obj *unstructured.Unstructured) { unstructured.RemoveNestedField(obj.Object, "spec", "replicas") }},
		{name: "dynamic to static", manifest: nodePoolManifest("sv-np-to-static"),
			edit: func(obj *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(obj.Object, int64(3), "spec", "replicas")
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stored := mustApply(t, tc.manifest)
			resource := resourceFor(t, stored)
			tc.edit(stored)
			_, err := resource.Update(t.Context(), stored, metav1.UpdateOptions{})
			if err == nil {
				t.Fatal("the API server accepted the update; want it refused")
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("update: %v; want 422 Invalid", err)
			}
			if msg := errorMessage(err); !strings.Contains(msg, "Cannot transition NodePool between static") {
				t.Errorf("the error does not name the rule:\n%s", msg)
			}
		})
	}
}

// TestNodePoolScaleSubresource scales a static NodePool as `kubectl scale nodepool x
// --replicas=N` does: through the scale subresource (autoscaling/v1 Scale), which reads
// spec.replicas and status.nodes.
func TestNodePoolScaleSubresource(t *testing.T) {
	stored := mustApply(t, nodePoolManifest("sv-np-scale", karpSet("spec.replicas", "2"), karpSet("spec.limits", "{nodes: 10}")))
	resource := resourceFor(t, stored)
	name := stored.GetName()

	scale, err := resource.Get(t.Context(), name, metav1.GetOptions{}, "scale")
	if err != nil {
		t.Fatalf("get the scale of %q: %v", name, err)
	}
	if scale.GetKind() != "Scale" {
		t.Fatalf("the scale subresource returned a %q, want Scale", scale.GetKind())
	}
	if got, _, _ := unstructured.NestedInt64(scale.Object, "spec", "replicas"); got != 2 {
		t.Errorf("Scale spec.replicas = %d, want 2", got)
	}

	if err := unstructured.SetNestedField(scale.Object, int64(5), "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	if _, err := resource.Update(t.Context(), scale, metav1.UpdateOptions{}, "scale"); err != nil {
		t.Fatalf("scale %q to 5: %s", name, errorMessage(err))
	}
	after, err := resource.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedInt64(after.Object, "spec", "replicas"); got != 5 {
		t.Errorf("spec.replicas after scaling = %d, want 5", got)
	}

	// The cap holds through the subresource as well.
	scale, err = resource.Get(t.Context(), name, metav1.GetOptions{}, "scale")
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(scale.Object, int64(1001), "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	if _, err := resource.Update(t.Context(), scale, metav1.UpdateOptions{}, "scale"); !apierrors.IsInvalid(err) {
		t.Errorf("scale %q to 1001: %v; want 422 Invalid", name, err)
	}
}
