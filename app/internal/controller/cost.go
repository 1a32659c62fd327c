package controller

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/controller/cost"
)

// setupCost exports the cost per NodePool, capacity type and zone as metrics
// (controller/cost): the numbers `joinery cost` prints, and Karpenter's
// karpenter_nodepools_cost_total from the same computation.
func setupCost(mgr ctrl.Manager, cp cloudprovider.CloudProvider) error {
	if err := mgr.Add(&cost.Exporter{Client: mgr.GetClient(), InstanceTypes: cloudprovider.Instrument(cp, cost.Name)}); err != nil {
		return fmt.Errorf("setting up %s: %w", cost.Name, err)
	}
	return nil
}
