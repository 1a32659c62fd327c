package plugin

import (
	"context"

	fwk "k8s.io/kube-scheduler/framework"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joinery-dev/joinery/internal/featuregates"
	"github.com/joinery-dev/joinery/simulation"
)

// PlannerOptions are what a solver is built from.
type PlannerOptions struct {
	// Handle is the framework handle of the profile the plugin runs in: its client, informer
	// factory and profile name.
	Handle fwk.Handle
	// Args are the plugin's defaulted, validated args (policies, MaxInstanceTypes).
	Args ProvisionerArgs
	// Client reads and writes joinery's kinds (NodePools, NodeClaims, node classes).
	Client client.Client
	// Cache reads NodePools and NodeClaims from the plugin's informers; nil means read them
	// through Client. Before each batch the plugin waits until the cache holds every NodeClaim
	// write it made, so a read through Cache sees the previous batch's NodeClaims. In the
	// plugin it is a controller-runtime cache, whose informers a planner may add to.
	Cache client.Reader
	// FeatureGates are Options.FeatureGates: Karpenter's gates (NodeOverlay, ...).
	FeatureGates featuregates.Gates
}

// PlannerFactory builds the solver for one scheduler profile. The binary passes it to New, so
// the plugin does not depend on how a solver is built (plugin/planner builds joinery's; tests
// pass fakes).
type PlannerFactory func(ctx context.Context, opts PlannerOptions) (simulation.Planner, error)
