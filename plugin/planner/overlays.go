package planner

import (
	"context"
	"errors"
	"fmt"

	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joinery-dev/joinery/apis/karpenter/v1alpha1"
	"github.com/joinery-dev/joinery/cloudprovider"
)

// watchOverlays keeps a NodeOverlays set current from an informer on the plugin's cache, so
// each batch plans with the overlays of the moment (no restart). The returned function reports
// whether the informer has synced.
func watchOverlays(ctx context.Context, cache client.Reader) (*cloudprovider.NodeOverlays, func() bool, error) {
	informers, ok := cache.(crcache.Informers)
	if !ok {
		return nil, nil, errors.New("NodeOverlay needs the plugin's informer cache to watch NodeOverlays")
	}
	informer, err := informers.GetInformer(ctx, &v1alpha1.NodeOverlay{}, crcache.BlockUntilSynced(false))
	if err != nil {
		return nil, nil, fmt.Errorf("watching NodeOverlays (is the CRD installed?): %w", err)
	}
	overlays := cloudprovider.NewNodeOverlays()
	reg, err := informer.AddEventHandler(overlays.EventHandler())
	if err != nil {
		return nil, nil, fmt.Errorf("watching NodeOverlays: %w", err)
	}
	return overlays, reg.HasSynced, nil
}
