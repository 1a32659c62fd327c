package controller

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/aws"
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
	schedulerConfig string
	schedulerName   string
	validationDelay time.Duration
	// consolidationValidationDelay replaces validationDelay for consolidation commands.
	consolidationValidationDelay time.Duration
	pollInterval                 time.Duration
	repairToleration             time.Duration
	preferencePolicy             solver.PreferencePolicy
	minValuesPolicy              solver.MinValuesPolicy
	ignoreDRARequests            bool
	// outOfTree are the scheduler plugins registered with the binary (app.WithPlugin).
	outOfTree frameworkruntime.Registry
}

// disruptionSimulation is the solver-backed simulation every disruption path shares: the
// disruption loop, expiration, repair and the cloud provider's interruption handling. It
// simulates with the provisioning solver over the scheduler's profile (the same configuration
// file joinery-scheduler reads) and is built once, for the cloud provider, by whichever of
// them asks first: the AWS provider asks while aws.New builds it.
type disruptionSimulation struct {
	ctx       context.Context
	mgr       ctrl.Manager
	namespace string
	opts      disruptionOptions

	simulator *disruption.SolverSimulator
	preplan   *disruption.Preplanner
	factory   informers.SharedInformerFactory
}

func newDisruptionSimulation(ctx context.Context, mgr ctrl.Manager, namespace string, opts disruptionOptions) *disruptionSimulation {
	return &disruptionSimulation{ctx: ctx, mgr: mgr, namespace: namespace, opts: opts}
}

// build builds the simulation for cp the first time it is called; later calls keep it.
func (s *disruptionSimulation) build(cp cloudprovider.CloudProvider) error {
	if s.simulator != nil {
		return nil
	}
	profile, err := schedulerProfile(s.opts)
	if err != nil {
		return err
	}
	clientset, err := kubernetes.NewForConfig(s.mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("building the simulation's clientset: %w", err)
	}
	factory := informers.NewSharedInformerFactory(clientset, 0)
	view := &disruption.View{}
	solv, err := solver.New(s.ctx, solver.Options{
		State:         view,
		InstanceTypes: cp,
		Profile:       profile,
		OutOfTree:     s.opts.outOfTree,
		Framework:     simulation.FrameworkOptions{Client: clientset, InformerFactory: factory},
		Unavailable:   view.Unavailable,
		// The same policies joinery-scheduler's Provisioner plans with.
		PreferencePolicy:  s.opts.preferencePolicy,
		MinValuesPolicy:   s.opts.minValuesPolicy,
		IgnoreDRARequests: s.opts.ignoreDRARequests,
	})
	if err != nil {
		return fmt.Errorf("building the disruption simulation: %w", err)
	}
	factory.Start(s.ctx.Done())
	// Replacements skip the offerings the lifecycle controller recorded as exhausted, as the
	// scheduler's Provisioner does.
	unavailable := state.NewUnavailableOfferings(s.mgr.GetClient(), s.mgr.GetAPIReader(), s.namespace, clock.RealClock{})
	s.simulator = disruption.NewSolverSimulator(solv, view, unavailable)
	// Forceful methods launch capacity for the pods of the node they remove at once.
	s.preplan = &disruption.Preplanner{Client: s.mgr.GetClient(), Simulator: s.simulator}
	s.factory = factory
	return nil
}

// preplanner is the Preplanner over the simulation for cp (aws.Options.Preplanner).
func (s *disruptionSimulation) preplanner(cp cloudprovider.CloudProvider) (aws.Preplanner, error) {
	if err := s.build(cp); err != nil {
		return nil, err
	}
	return s.preplan, nil
}

// setupDisruption adds the disruption loop (drift, emptiness, multi- and single-node
// consolidation), expiration, the pod-event
// conditions and, behind NodeRepair, node repair, all on the shared simulation.
func setupDisruption(mgr ctrl.Manager, cp cloudprovider.CloudProvider, sim *disruptionSimulation, gates featuregates.Gates) error {
	// A provider that suspends disruption in impaired zones (AWS: ARC zonal shifts).
	zones, _ := cp.(disruption.ZoneSuspender)
	cp = cloudprovider.Instrument(cp, disruption.Name)
	recorder := mgr.GetEventRecorder(nodeclaim.EventSource)
	if err := podevents.New(mgr.GetClient(), nil).SetupWithManager(sim.ctx, mgr); err != nil {
		return fmt.Errorf("setting up %s: %w", podevents.Name, err)
	}
	if err := sim.build(cp); err != nil {
		return err
	}
	if err := expiration.New(mgr.GetClient(), recorder, nil, sim.preplan).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up %s: %w", expiration.Name, err)
	}
	if gates.Enabled(featuregates.NodeRepair) {
		if err := repair.New(mgr.GetClient(), cp, recorder, nil, repair.Options{Toleration: sim.opts.repairToleration, Preplan: sim.preplan}).SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up %s: %w", repair.Name, err)
		}
	}
	consolidation := disruption.Consolidation{Simulator: sim.simulator, InstanceTypes: cp, SpotToSpot: gates.Enabled(featuregates.SpotToSpotConsolidation)}
	methods := disruption.GracefulMethods(consolidation)
	volatileRequests, err := setupVolatileRequests(mgr, sim)
	if err != nil {
		return err
	}
	loopOpts := disruption.Options{
		ValidationDelay:              sim.opts.validationDelay,
		ConsolidationValidationDelay: sim.opts.consolidationValidationDelay,
		PollInterval:                 sim.opts.pollInterval,
		Volatile:                     volatileRequests,
		InstanceTypes:                cp,
		Zones:                        zones,
	}
	if gates.Enabled(featuregates.CapacityBuffer) {
		loopOpts.Buffers = &disruption.Buffers{Reader: mgr.GetClient(), Simulator: sim.simulator}
	}
	loop := disruption.New(mgr.GetClient(), mgr.GetAPIReader(), recorder, clock.RealClock{}, methods, loopOpts)
	if err := mgr.Add(&syncedRunnable{factory: sim.factory, runnable: loop}); err != nil {
		return fmt.Errorf("setting up %s: %w", disruption.Name, err)
	}
	return nil
}

// schedulerProfile is the profile disruption simulates with. A plugin it enables or configures
// that is neither in-tree nor registered is an *simulation.UnknownPluginsError.
func schedulerProfile(opts disruptionOptions) (*config.KubeSchedulerProfile, error) {
	if opts.schedulerConfig == "" {
		return simulation.DefaultProfile()
	}
	profile, err := simulation.LoadProfile(opts.schedulerConfig, opts.schedulerName)
	if err != nil {
		return nil, err
	}
	if err := simulation.CheckPlugins(profile, opts.outOfTree); err != nil {
		return nil, fmt.Errorf("--scheduler-config %s: %w", opts.schedulerConfig, err)
	}
	return profile, nil
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
