package controller

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/controller/disruption"
	"github.com/joinery-dev/joinery/controller/disruption/expiration"
	"github.com/joinery-dev/joinery/controller/disruption/podevents"
	"github.com/joinery-dev/joinery/controller/disruption/repair"
	"github.com/joinery-dev/joinery/controller/nodeclaim"
	"github.com/joinery-dev/joinery/controller/state"
	"github.com/joinery-dev/joinery/internal/featuregates"
	"github.com/joinery-dev/joinery/plugin"
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
	// overrides replace the profile's Provisioner args: the environment's policy settings and
	// the --preference-policy, --min-values-policy and --ignore-dra-requests flags, when given.
	overrides plugin.ArgOverrides
	// engine is the profile and Provisioner args the simulation runs with (loadEngine).
	engine plugin.Engine
	// outOfTree are the scheduler plugins registered with the binary (app.WithPlugin).
	outOfTree frameworkruntime.Registry
}

// disruptionSimulation is the solver-backed simulation every disruption path shares: the
// disruption loop, expiration, repair and the cloud provider's interruption handling. It
// simulates with the provisioning solver over the scheduler's profile (the same configuration
// file joinery-scheduler reads) and is built once, by setupDisruption, over the instrumented
// cloud provider. The AWS provider, which needs a Preplanner while aws.New builds it, gets one
// that forwards to the simulation once built (preplanner), so that no caller builds the
// simulation over the provider before it is instrumented.
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

// build builds the simulation for cp; a second call is an error.
func (s *disruptionSimulation) build(cp cloudprovider.CloudProvider) error {
	if s.simulator != nil {
		return errors.New("the disruption simulation is built once")
	}
	clientset, err := kubernetes.NewForConfig(s.mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("building the simulation's clientset: %w", err)
	}
	factory := informers.NewSharedInformerFactory(clientset, 0)
	// Replacements skip the offerings the lifecycle controller recorded as exhausted, as the
	// scheduler's Provisioner does.
	unavailable := state.NewUnavailableOfferings(s.mgr.GetClient(), s.mgr.GetAPIReader(), s.namespace, clock.RealClock{})
	sim, err := disruption.NewSimulation(s.ctx, s.opts.simulationOptions(cp, clientset, factory, unavailable))
	if err != nil {
		return err
	}
	// The simulation parses each pod version once, as the manager's cache delivers it, not
	// in every pass's load (the first after start included).
	pods, err := s.mgr.GetCache().GetInformer(s.ctx, &corev1.Pod{}, crcache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("watching pods for the disruption simulation: %w", err)
	}
	if _, err := pods.AddEventHandler(sim.PodEvents()); err != nil {
		return fmt.Errorf("watching pods for the disruption simulation: %w", err)
	}
	factory.Start(s.ctx.Done())
	s.simulator = sim
	// Forceful methods launch capacity for the pods of the node they remove at once.
	s.preplan = &disruption.Preplanner{Client: s.mgr.GetClient(), Simulator: s.simulator}
	s.factory = factory
	return nil
}

// preplanner is the Preplanner over the simulation (aws.Options.Preplanner). It does not
// build the simulation over the provider it is handed, which is not instrumented yet: it
// forwards to the simulation setupDisruption builds before the manager starts.
func (s *disruptionSimulation) preplanner(cloudprovider.CloudProvider) (cloudprovider.Preplanner, error) {
	return deferredPreplanner{s}, nil
}

// deferredPreplanner is the simulation's Preplanner, resolved on each call.
type deferredPreplanner struct{ sim *disruptionSimulation }

func (p deferredPreplanner) Preplan(ctx context.Context, method string, nc *karpv1.NodeClaim) ([]string, error) {
	if p.sim.preplan == nil {
		return nil, errors.New("the disruption simulation is not built yet")
	}
	return p.sim.preplan.Preplan(ctx, method, nc)
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
	// The loop and its queue act on a freed budget or an initialized replacement as the
	// cache sees it, not at their next poll.
	informer, err := mgr.GetCache().GetInformer(sim.ctx, &karpv1.NodeClaim{})
	if err != nil {
		return fmt.Errorf("setting up %s: the nodeclaim informer: %w", disruption.Name, err)
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(o, n any) {
			old, okOld := o.(*karpv1.NodeClaim)
			nc, okNew := n.(*karpv1.NodeClaim)
			if okOld && okNew {
				loop.NodeClaimChanged(old, nc)
			}
		},
		DeleteFunc: func(o any) {
			if gone, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = gone.Obj
			}
			if old, ok := o.(*karpv1.NodeClaim); ok {
				loop.NodeClaimChanged(old, nil)
			}
		},
	}); err != nil {
		return fmt.Errorf("setting up %s: the nodeclaim handler: %w", disruption.Name, err)
	}
	return nil
}

// loadEngine loads the profile and Provisioner args of --scheduler-config (kube-scheduler's
// default profile without it) with the overrides applied. A plugin the profile enables or
// configures that is neither in-tree nor registered is an *simulation.UnknownPluginsError.
func (o disruptionOptions) loadEngine() (plugin.Engine, error) {
	engine, err := plugin.LoadEngine(o.schedulerConfig, o.schedulerName, o.outOfTree, o.overrides)
	if err != nil {
		return plugin.Engine{}, fmt.Errorf("--scheduler-config: %w", err)
	}
	return engine, nil
}

// simulationOptions are the options of the controller's disruption simulation over cp: the
// loaded engine's profile and policies, the binary's plugins.
func (o disruptionOptions) simulationOptions(cp cloudprovider.InstanceTypeLister, client kubernetes.Interface, factory informers.SharedInformerFactory, offerings disruption.UnavailableSource) disruption.SimulationOptions {
	return disruption.SimulationOptions{
		Profile:         o.engine.Profile,
		OutOfTree:       o.outOfTree,
		InstanceTypes:   cp,
		Client:          client,
		InformerFactory: factory,
		Offerings:       offerings,
		Policies:        o.engine.Args.Policies(),
	}
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

// override is a flag that sets *dst only when given, so that an absent flag overrides nothing.
type override[T ~string] struct{ dst **T }

func (f override[T]) String() string {
	if f.dst == nil || *f.dst == nil {
		return ""
	}
	return string(**f.dst)
}

func (f override[T]) Set(v string) error {
	t := T(v)
	*f.dst = &t
	return nil
}

// boolOverride is override for a boolean flag.
type boolOverride struct{ dst **bool }

func (f boolOverride) String() string {
	if f.dst == nil || *f.dst == nil {
		return ""
	}
	return strconv.FormatBool(**f.dst)
}

func (f boolOverride) Set(v string) error {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return err
	}
	*f.dst = &b
	return nil
}

func (boolOverride) IsBoolFlag() bool { return true }
