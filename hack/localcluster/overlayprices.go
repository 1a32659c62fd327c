package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/apis/karpenter/v1alpha1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/kwok/catalog"
	"github.com/joinery-dev/joinery/internal/featuregates"
)

var nodeOverlaysResource = schema.GroupVersionResource{Group: v1alpha1.Group, Version: "v1alpha1", Resource: "nodeoverlays"}

// overlayRefresh is how often the view re-reads the NodeOverlays: once per refresh of the view.
const overlayRefresh = refreshInterval

// overlayPrices is the kwok catalog's prices as the cluster's NodeOverlays adjust them, so the
// view bills what joinery decides with. It is used when the NodeOverlay gate is on in
// FEATURE_GATES, which the cluster's binaries read too.
type overlayPrices struct {
	its      cloudprovider.InstanceTypes
	overlays *cloudprovider.NodeOverlays
	list     func(ctx context.Context) ([]v1alpha1.NodeOverlay, error)

	mu   sync.Mutex
	read time.Time
}

// kwokOverlayPrices returns the overlay-aware pricer when the gate is on, else nil.
func kwokOverlayPrices(dyn dynamic.Interface) (*overlayPrices, error) {
	gates, err := featuregates.FromEnv(os.Getenv(featuregates.EnvVar))
	if err != nil || !gates.Enabled(featuregates.NodeOverlay) {
		return nil, err
	}
	file, err := catalog.Default()
	if err != nil {
		return nil, fmt.Errorf("loading the kwok catalog: %w", err)
	}
	its, err := file.Build(catalog.BuildOptions{})
	if err != nil {
		return nil, fmt.Errorf("building the kwok catalog: %w", err)
	}
	return &overlayPrices{its: its, overlays: cloudprovider.NewNodeOverlays(), list: func(ctx context.Context) ([]v1alpha1.NodeOverlay, error) {
		list, err := dyn.Resource(nodeOverlaysResource).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		out := make([]v1alpha1.NodeOverlay, len(list.Items))
		for i := range list.Items {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &out[i]); err != nil {
				return nil, err
			}
		}
		return out, nil
	}}, nil
}

// price is the offering's price with the overlays applied for the node's NodePool.
func (p *overlayPrices) price(labels map[string]string) (float64, bool) {
	p.refresh()
	name := labels[corev1.LabelInstanceTypeStable]
	for _, it := range p.overlays.Apply(labels[karpv1.NodePoolLabelKey], p.its) {
		if it.Name != name {
			continue
		}
		for _, o := range it.Offerings {
			if o.CapacityType() == labels[karpv1.CapacityTypeLabelKey] && o.Zone() == labels[corev1.LabelTopologyZone] {
				return o.Price, true
			}
		}
	}
	return 0, false
}

// refresh re-reads the overlays at most every overlayRefresh; a failed read keeps the last.
func (p *overlayPrices) refresh() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.list == nil || time.Since(p.read) < overlayRefresh {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), overlayRefresh)
	defer cancel()
	if overlays, err := p.list(ctx); err == nil {
		p.overlays.Replace(overlays)
		p.read = time.Now()
	}
}
