package controller

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/controller/nodeclaim"
	"github.com/joinery-dev/joinery/controller/nodeoverlay"
	"github.com/joinery-dev/joinery/internal/featuregates"
)

// nodeOverlays is the NodeOverlay set the cloud provider applies to its catalog, or nil when
// the NodeOverlay gate is off.
func nodeOverlays(gates featuregates.Gates) *cloudprovider.NodeOverlays {
	if !gates.Enabled(featuregates.NodeOverlay) {
		return nil
	}
	return cloudprovider.NewNodeOverlays()
}

// overlayOf is overlays as a provider option: a nil interface when the gate is off.
func overlayOf(overlays *cloudprovider.NodeOverlays) cloudprovider.Overlay {
	if overlays == nil {
		return nil
	}
	return overlays
}

// setupNodeOverlays watches NodeOverlays into overlays and writes their status, when the gate
// is on (overlays not nil).
func setupNodeOverlays(ctx context.Context, mgr ctrl.Manager, cp cloudprovider.CloudProvider, overlays *cloudprovider.NodeOverlays) error {
	if overlays == nil {
		return nil
	}
	c := nodeoverlay.New(mgr.GetClient(), cp, overlays, mgr.GetEventRecorder(nodeclaim.EventSource), nil)
	if err := c.SetupWithManager(ctx, mgr); err != nil {
		return fmt.Errorf("setting up %s: %w", nodeoverlay.Name, err)
	}
	return nil
}
