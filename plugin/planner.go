package plugin

import (
	"context"
	"errors"

	fwk "k8s.io/kube-scheduler/framework"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	// write it made, so a read through Cache sees the previous batch's NodeClaims.
	Cache client.Reader
}

// PlannerFactory builds the solver for one scheduler profile.
type PlannerFactory func(ctx context.Context, opts PlannerOptions) (simulation.Planner, error)

// ErrNoPlanner is what NewPlanner returns until a solver is registered.
var ErrNoPlanner = errors.New("no solver is registered (plugin.NewPlanner is unset)")

// NewPlanner builds the solver. cmd/joinery-scheduler sets it before the scheduler starts;
// the plugin never imports the solver, so it can be replaced (tests, other solvers) without
// editing the plugin.
//
// Temporary state: until the solver lands, NewPlanner returns ErrNoPlanner, the plugin logs
// that provisioning is disabled, and pods are only reported as pending (disabledMessage).
var NewPlanner PlannerFactory = func(context.Context, PlannerOptions) (simulation.Planner, error) {
	return nil, ErrNoPlanner
}
