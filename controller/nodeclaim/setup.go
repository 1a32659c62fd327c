// Package nodeclaim wires the NodeClaim controllers into a manager: lifecycle (launch,
// registration, initialization), the termination finalizers of NodeClaims and Nodes, drift
// detection (the Drifted condition), the consistency check (ConsistentStateFound), and garbage collection of leaked instances and NodeClaims
// whose instance is gone.
package nodeclaim

import (
	"context"
	"fmt"
	"time"

	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/controller/nodeclaim/consistency"
	"github.com/joinery-dev/joinery/controller/nodeclaim/drift"
	"github.com/joinery-dev/joinery/controller/nodeclaim/garbagecollection"
	"github.com/joinery-dev/joinery/controller/nodeclaim/lifecycle"
	"github.com/joinery-dev/joinery/controller/nodeclaim/termination"
	"github.com/joinery-dev/joinery/controller/state"
)

// EventSource is the component events are reported from; Karpenter's name, so `kubectl
// describe` reads as Karpenter's documentation shows.
const EventSource = "karpenter"

// Options configure the NodeClaim controllers.
type Options struct {
	// Namespace holds the controller's own objects, such as the unavailable-offerings ConfigMap.
	Namespace string
	// RegistrationTTL is how long after its creation a NodeClaim may wait for its Node to
	// register (the liveness TTL).
	RegistrationTTL time.Duration
	// InitializationTTL is how long after registering a Node may take to initialize.
	InitializationTTL time.Duration
	// GCInterval is the time between garbage collections; garbagecollection.DefaultInterval if
	// zero.
	GCInterval time.Duration
}

// Setup registers the provider-ID indexes and the NodeClaim controllers with mgr.
func Setup(ctx context.Context, mgr ctrl.Manager, cp cloudprovider.CloudProvider, opts Options) error {
	if err := state.IndexProviderIDs(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	recorder := mgr.GetEventRecorder(EventSource)
	unavailable := state.NewUnavailableOfferings(mgr.GetClient(), mgr.GetAPIReader(), opts.Namespace, clock.RealClock{})
	// Each controller's cloud provider calls are timed and counted under its name.
	lc := lifecycle.New(mgr.GetClient(), cloudprovider.Instrument(cp, lifecycle.Name), unavailable, recorder, lifecycle.Options{RegistrationTTL: opts.RegistrationTTL, InitializationTTL: opts.InitializationTTL, LiveReader: mgr.GetAPIReader()})
	if err := lc.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up %s: %w", lifecycle.Name, err)
	}
	if err := termination.NewNodeClaimController(mgr.GetClient(), cloudprovider.Instrument(cp, termination.NodeClaimControllerName), recorder).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up %s: %w", termination.NodeClaimControllerName, err)
	}
	if err := termination.NewNodeController(mgr.GetClient(), cloudprovider.Instrument(cp, termination.NodeControllerName)).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up %s: %w", termination.NodeControllerName, err)
	}
	if err := consistency.New(mgr.GetClient(), recorder).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up %s: %w", consistency.Name, err)
	}
	if err := drift.New(mgr.GetClient(), cloudprovider.Instrument(cp, drift.Name), drift.Options{}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up %s: %w", drift.Name, err)
	}
	if err := mgr.Add(garbagecollection.New(mgr.GetClient(), cloudprovider.Instrument(cp, garbagecollection.Name), recorder, garbagecollection.Options{Interval: opts.GCInterval})); err != nil {
		return fmt.Errorf("setting up %s: %w", garbagecollection.Name, err)
	}
	return nil
}
