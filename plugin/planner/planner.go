// Package planner builds the planner the Provisioner plugin runs with in joinery-scheduler:
// the solver over the scheduler profile's own plugins and args, cluster state from the
// scheduler's informers, instance types from a cloud provider, and the controller's record of
// unavailable offerings. The cloud provider is a parameter, so each provider's binary (kwok
// today) wires the same planner.
package planner

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/internal/featuregates"
	"github.com/joinery-dev/joinery/plugin"
	"github.com/joinery-dev/joinery/simulation"
	"github.com/joinery-dev/joinery/simulation/solver"
)

// DefaultUnavailableOfferingsNamespace is where joinery-controller keeps the
// unavailable-offerings record unless told otherwise (its leader-election namespace).
const DefaultUnavailableOfferingsNamespace = "kube-system"

// InstanceTypesFunc builds the cloud provider's instance-type source over the plugin's client
// (providers read their node classes through it), with overlay applied to its instance types
// (nil: the NodeOverlay gate is off).
type InstanceTypesFunc func(c client.Client, overlay cloudprovider.Overlay) (cloudprovider.InstanceTypeLister, error)

// Config says how planners are built. Its New is the plugin's planner factory
// (plugin.Options.NewPlanner).
type Config struct {
	// InstanceTypes is the cloud provider's instance-type source; required.
	InstanceTypes InstanceTypesFunc
	// SchedulerConfigPath is the KubeSchedulerConfiguration file the scheduler runs with (its
	// --config): the solver builds its simulation framework from the same profile, so its
	// Filters are the scheduler's. Empty means kube-scheduler's default profile.
	SchedulerConfigPath string
	// OutOfTree are the plugins compiled into the scheduler besides the in-tree ones and the
	// Provisioner (app.WithPlugin): the solver's framework needs them to run the profile.
	OutOfTree frameworkruntime.Registry
	// UnavailableOfferingsNamespace holds the unavailable-offerings ConfigMap;
	// DefaultUnavailableOfferingsNamespace when empty.
	UnavailableOfferingsNamespace string
	// Now is the clock the unavailable-offerings record is read at; time.Now when nil. An
	// offline simulation reads a snapshot's record at the snapshot's time.
	Now func() time.Time
}

// New builds the solver for one scheduler profile. It is a plugin.PlannerFactory.
func (c *Config) New(ctx context.Context, opts plugin.PlannerOptions) (simulation.Planner, error) {
	if c.InstanceTypes == nil {
		return nil, errors.New("planner config: no instance-type source")
	}
	profile, err := c.profile(opts.Handle.ProfileName())
	if err != nil {
		return nil, err
	}
	// NodeOverlays change the provider's catalog itself, so every reader of it sees them.
	var overlay cloudprovider.Overlay
	overlaysSynced := func() bool { return true }
	if opts.FeatureGates.Enabled(featuregates.NodeOverlay) {
		overlays, synced, err := watchOverlays(ctx, opts.Cache)
		if err != nil {
			return nil, err
		}
		overlay, overlaysSynced = overlays, synced
	}
	instanceTypes, err := c.InstanceTypes(opts.Client, overlay)
	if err != nil {
		return nil, fmt.Errorf("building the cloud provider's instance types: %w", err)
	}
	factory := opts.Handle.SharedInformerFactory()
	namespace := c.UnavailableOfferingsNamespace
	if namespace == "" {
		namespace = DefaultUnavailableOfferingsNamespace
	}
	unavailable := &unavailableOfferings{client: opts.Client, namespace: namespace}
	s, err := solver.New(ctx, solver.Options{
		InstanceTypes: instanceTypes,
		Profile:       profile,
		OutOfTree:     c.OutOfTree,
		Framework: simulation.FrameworkOptions{
			Client:          opts.Handle.ClientSet(),
			InformerFactory: factory,
		},
		Unavailable: unavailable.contains,
	}.WithPolicies(opts.Args.Policies()))
	if err != nil {
		return nil, err
	}
	// The engine's plugins may have asked the factory for informers the scheduler had not.
	// Start them, but do not wait here: kube-scheduler calls this from its plugin factory,
	// before its health server is up, and on a large cluster the sync outlasts the liveness
	// probe. The plugin waits (WaitForCacheSync) before its first batch instead.
	factory.Start(ctx.Done())
	now := c.Now
	if now == nil {
		now = time.Now
	}
	notifier, _ := instanceTypes.(cloudprovider.AvailabilityNotifier)
	return &refreshingPlanner{
		solver: s, state: NewInformerState(cmpReader(opts.Cache, opts.Client), factory),
		unavailable: unavailable, factory: factory, overlaysSynced: overlaysSynced, now: now, notifier: notifier,
	}, nil
}

// cmpReader returns the first reader that is set.
func cmpReader(readers ...client.Reader) client.Reader {
	for _, r := range readers {
		if r != nil {
			return r
		}
	}
	return nil
}

// profile loads the named profile from the scheduler's config file, or the default profile
// when the scheduler runs without one.
func (c *Config) profile(name string) (*config.KubeSchedulerProfile, error) {
	if c.SchedulerConfigPath == "" {
		return simulation.DefaultProfile()
	}
	return simulation.LoadProfile(c.SchedulerConfigPath, name)
}

// refreshingPlanner plans each batch with the solver on the scheduler's informers (state,
// handed over per call), after re-reading the unavailable-offerings record, so offerings the
// controller found exhausted are skipped for as long as it records them.
type refreshingPlanner struct {
	solver      *solver.Solver
	state       solver.ClusterState
	unavailable *unavailableOfferings
	factory     informers.SharedInformerFactory
	// overlaysSynced reports whether the NodeOverlay informer has synced (true without one).
	overlaysSynced func() bool
	now            func() time.Time
	// notifier, when the cloud provider has one, announces offerings available again.
	notifier cloudprovider.AvailabilityNotifier
}

// WaitForCacheSync waits until the informers the solver reads have synced; false when ctx
// ended first. The plugin calls it before its first batch (see plugin.CacheSyncer).
func (p *refreshingPlanner) WaitForCacheSync(ctx context.Context) bool {
	for _, synced := range p.factory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return false
		}
	}
	// Planning before the overlays are known would launch at the wrong prices.
	return toolscache.WaitForCacheSync(ctx.Done(), p.overlaysSynced) && ctx.Err() == nil
}

func (p *refreshingPlanner) Plan(ctx context.Context, pods []*corev1.Pod) (*simulation.Plan, error) {
	if err := p.unavailable.refresh(ctx, p.now()); err != nil {
		return nil, err
	}
	return p.solver.Plan(ctx, p.state, pods)
}

var _ plugin.UnavailableOfferings = (*refreshingPlanner)(nil)

// SkippedUntil returns when the earliest unavailable offering the last plan skipped returns.
func (p *refreshingPlanner) SkippedUntil() (time.Time, bool) { return p.unavailable.skippedUntil() }

var _ plugin.OfferingsAnnouncer = (*refreshingPlanner)(nil)

// OnOfferingsReturn registers fn with the cloud provider's notifier; without one nothing calls
// it.
func (p *refreshingPlanner) OnOfferingsReturn(fn func(why string)) {
	if p.notifier != nil {
		p.notifier.OnOfferingsReturn(fn)
	}
}

// PlanDisruption runs the solver's PlanDisruption after the same refresh as Plan: each pod is
// first tried on the cluster's nodes with the real Filters, as kube-scheduler places a pod
// before the Provisioner ever sees it, then planned as Plan plans it. joinery's offline
// what-if simulation plans a snapshot's pending pods this way, with this very planner.
func (p *refreshingPlanner) PlanDisruption(ctx context.Context, pods []*corev1.Pod) (*simulation.Plan, error) {
	if err := p.unavailable.refresh(ctx, p.now()); err != nil {
		return nil, err
	}
	return p.solver.PlanDisruption(ctx, p.state, pods)
}
