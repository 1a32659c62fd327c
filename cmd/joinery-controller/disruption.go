package main

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/controller/disruption"
	"github.com/joinery-dev/joinery/controller/disruption/expiration"
	"github.com/joinery-dev/joinery/controller/disruption/podevents"
	"github.com/joinery-dev/joinery/controller/disruption/repair"
	"github.com/joinery-dev/joinery/controller/nodeclaim"
	"github.com/joinery-dev/joinery/controller/state"
	"github.com/joinery-dev/joinery/internal/featuregates"
	"github.com/joinery-dev/joinery/simulation"
	"github.com/joinery-dev/joinery/simulation/solver"
)

// disruptionOptions are the disruption controllers' flags.
type disruptionOptions struct {
	schedulerConfig  string
	schedulerName    string
	validationDelay  time.Duration
	pollInterval     time.Duration
	repairToleration time.Duration
}

// setupDisruption adds the disruption loop (drift, emptiness, multi- and single-node
// consolidation), expiration, the pod-event
// conditions and, behind NodeRepair, node repair. The loop simulates with the provisioning
// solver over the scheduler's profile (the same configuration file joinery-scheduler reads).
func setupDisruption(ctx context.Context, mgr ctrl.Manager, cp cloudprovider.CloudProvider, namespace string, gates featuregates.Gates, opts disruptionOptions) error {
	recorder := mgr.GetEventRecorder(nodeclaim.EventSource)
	if err := podevents.New(mgr.GetClient(), nil).SetupWithManager(ctx, mgr); err != nil {
		return fmt.Errorf("setting up %s: %w", podevents.Name, err)
	}

	profile, err := schedulerProfile(opts)
	if err != nil {
		return err
	}
	clientset, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("building the simulation's clientset: %w", err)
	}
	factory := informers.NewSharedInformerFactory(clientset, 0)
	view := &disruption.View{}
	s, err := solver.New(ctx, solver.Options{
		State:         view,
		InstanceTypes: cp,
		Profile:       profile,
		Framework:     simulation.FrameworkOptions{Client: clientset, InformerFactory: factory},
		Unavailable:   view.Unavailable,
	})
	if err != nil {
		return fmt.Errorf("building the disruption simulation: %w", err)
	}
	factory.Start(ctx.Done())
	// Replacements skip the offerings the lifecycle controller recorded as exhausted, as the
	// scheduler's Provisioner does.
	unavailable := state.NewUnavailableOfferings(mgr.GetClient(), mgr.GetAPIReader(), namespace, clock.RealClock{})
	sim := disruption.NewSolverSimulator(s, view, unavailable)
	// Forceful methods launch capacity for the pods of the node they remove at once.
	preplan := &disruption.Preplanner{Client: mgr.GetClient(), Simulator: sim}
	if err := expiration.New(mgr.GetClient(), recorder, nil, preplan).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up %s: %w", expiration.Name, err)
	}
	if gates.Enabled(featuregates.NodeRepair) {
		if err := repair.New(mgr.GetClient(), cp, recorder, nil, repair.Options{Toleration: opts.repairToleration, Preplan: preplan}).SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up %s: %w", repair.Name, err)
		}
	}
	consolidation := disruption.Consolidation{Simulator: sim, InstanceTypes: cp, SpotToSpot: gates.Enabled(featuregates.SpotToSpotConsolidation)}
	methods := []disruption.Method{
		&disruption.Drift{Simulator: sim},
		&disruption.Emptiness{},
		&disruption.MultiNodeConsolidation{Consolidation: consolidation},
		&disruption.SingleNodeConsolidation{Consolidation: consolidation},
	}
	loop := disruption.New(mgr.GetClient(), mgr.GetAPIReader(), recorder, clock.RealClock{}, methods, disruption.Options{
		ValidationDelay: opts.validationDelay,
		PollInterval:    opts.pollInterval,
	})
	if err := mgr.Add(&syncedRunnable{factory: factory, runnable: loop}); err != nil {
		return fmt.Errorf("setting up %s: %w", disruption.Name, err)
	}
	return nil
}

func schedulerProfile(opts disruptionOptions) (*config.KubeSchedulerProfile, error) {
	if opts.schedulerConfig == "" {
		return simulation.DefaultProfile()
	}
	return simulation.LoadProfile(opts.schedulerConfig, opts.schedulerName)
}

// syncedRunnable starts the loop once the simulation's informers have synced.
type syncedRunnable struct {
	factory  informers.SharedInformerFactory
	runnable *disruption.Controller
}

func (r *syncedRunnable) Start(ctx context.Context) error {
	r.factory.Start(ctx.Done())
	r.factory.WaitForCacheSync(ctx.Done())
	return r.runnable.Start(ctx)
}

func (r *syncedRunnable) NeedLeaderElection() bool { return true }
