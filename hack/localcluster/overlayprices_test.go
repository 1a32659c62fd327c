package main

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/apis/karpenter/v1alpha1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/kwok/catalog"
)

// TestOverlayPrices: with the gate on, the view bills a node at its NodePool's overlay price.
func TestOverlayPrices(t *testing.T) {
	file, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	its, err := file.Build(catalog.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	overlay := v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "m5"}, Spec: v1alpha1.NodeOverlaySpec{
		Requirements: []v1alpha1.NodeSelectorRequirement{{Key: karpv1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"default"}}},
		Price:        ptr.To("0.01"),
	}}
	p := &overlayPrices{its: its, overlays: cloudprovider.NewNodeOverlays(), list: func(context.Context) ([]v1alpha1.NodeOverlay, error) {
		return []v1alpha1.NodeOverlay{overlay}, nil
	}}
	labels := map[string]string{corev1.LabelInstanceTypeStable: "m5.large", karpv1.CapacityTypeLabelKey: "on-demand", corev1.LabelTopologyZone: "test-zone-a"}
	book, err := kwokPriceBook()
	if err != nil {
		t.Fatal(err)
	}
	base, _ := book.price(labels)

	labels[karpv1.NodePoolLabelKey] = "default"
	if got, ok := p.price(labels); !ok || got != 0.01 {
		t.Errorf("price in NodePool default = %v (%t), want the overlay's 0.01", got, ok)
	}
	labels[karpv1.NodePoolLabelKey] = "other"
	if got, ok := p.price(labels); !ok || got != base {
		t.Errorf("price in NodePool other = %v (%t), want the catalog's %v", got, ok, base)
	}
}
