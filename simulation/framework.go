package simulation

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	resourceslicetracker "k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodevolumelimits"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	"k8s.io/kubernetes/pkg/scheduler/util/assumecache"
)

// FrameworkOptions are what the plugins of a profile need besides their args.
type FrameworkOptions struct {
	// Client and InformerFactory back the plugins that read cluster objects (VolumeBinding,
	// NodeVolumeLimits, VolumeZone, DynamicResources, DefaultPreemption, ...). Building the
	// framework registers their informers; start the factory and wait for its caches after
	// NewFramework returns.
	Client          clientset.Interface
	InformerFactory informers.SharedInformerFactory
	// Snapshot is the cluster state the plugins see.
	Snapshot fwk.SharedLister
	// DRAManager, when nil and DynamicResourceAllocation is enabled, is built from
	// InformerFactory the way kube-scheduler builds its own.
	DRAManager fwk.SharedDRAManager
	// Exclude names plugins not to run; nil means ProvisionerPluginName.
	Exclude []string
	// Parallelism bounds the framework's internal parallelism; 0 means the framework default.
	Parallelism int
	// IsolatedPreFilter makes an Engine compute every equivalence class's PreFilter state
	// on its own instead of copying what classes with the same constraints share; for
	// comparisons only, it plans the same, slower.
	IsolatedPreFilter bool
}

// NewFramework builds a framework with the same plugins and args as profile, from the
// in-tree registry merged with outOfTree (the plugins compiled into the binary), minus the
// excluded plugins.
func NewFramework(ctx context.Context, profile *config.KubeSchedulerProfile, outOfTree frameworkruntime.Registry, opts FrameworkOptions) (framework.Framework, error) {
	fw, _, err := newFramework(ctx, profile, outOfTree, opts)
	return fw, err
}

// newFramework is NewFramework that also returns the plugin instances it built, by name, so
// the engine can run one plugin's PreFilter or PreFilterExtensions on its own.
func newFramework(ctx context.Context, profile *config.KubeSchedulerProfile, outOfTree frameworkruntime.Registry, opts FrameworkOptions) (framework.Framework, map[string]fwk.Plugin, error) {
	if profile == nil {
		return nil, nil, errors.New("scheduler profile is nil")
	}
	if opts.Client == nil || opts.InformerFactory == nil {
		return nil, nil, errors.New("a client and an informer factory are required")
	}
	if opts.Snapshot == nil {
		return nil, nil, errors.New("a snapshot is required")
	}
	// The framework instruments its plugins with the scheduler's metrics, which must exist
	// (registration is idempotent; kube-scheduler does it at start-up).
	metrics.Register()

	exclude := opts.Exclude
	if exclude == nil {
		exclude = []string{ProvisionerPluginName}
	}

	registry := plugins.NewInTreeRegistry()
	if err := registry.Merge(outOfTree); err != nil {
		return nil, nil, fmt.Errorf("merging out-of-tree plugins: %w", err)
	}
	for _, name := range exclude {
		delete(registry, name)
		profile = withoutPlugin(profile, name)
	}
	// A plugin the profile names but nobody registered is a start-up error that says how to
	// register it, not the framework's bare "does not exist".
	if err := CheckPlugins(profile, outOfTree); err != nil {
		return nil, nil, err
	}

	draManager := opts.DRAManager
	if draManager == nil && utilfeature.DefaultFeatureGate.Enabled(features.DynamicResourceAllocation) {
		var err error
		if draManager, err = newDRAManager(ctx, opts.Client, opts.InformerFactory); err != nil {
			return nil, nil, err
		}
	}

	if s, ok := opts.Snapshot.(*Snapshot); ok && draManager != nil {
		draManager = snapshotDRAManager{SharedDRAManager: draManager, snapshot: s}
	}

	csiLister := opts.InformerFactory.Storage().V1().CSINodes().Lister()
	var csi fwk.CSIManager = nodevolumelimits.NewCSIManager(csiLister)
	if src, ok := opts.Snapshot.(csiNodeSource); ok {
		csi = csiManager{snapshot: src, cluster: csiLister}
	}
	frameworkOpts := []frameworkruntime.Option{
		frameworkruntime.WithClientSet(discardWrites()),
		frameworkruntime.WithInformerFactory(opts.InformerFactory),
		frameworkruntime.WithSnapshotSharedLister(opts.Snapshot),
		frameworkruntime.WithSharedCSIManager(csi),
		frameworkruntime.WithSharedDRAManager(draManager),
		frameworkruntime.WithLogger(klog.FromContext(ctx).WithName("simulation")),
	}
	if opts.Parallelism > 0 {
		frameworkOpts = append(frameworkOpts, frameworkruntime.WithParallelism(opts.Parallelism))
	}
	if pgm, ok := opts.Snapshot.(fwk.PodGroupManager); ok {
		frameworkOpts = append(frameworkOpts, frameworkruntime.WithPodGroupManager(pgm))
	}
	built := map[string]fwk.Plugin{}
	for name, factory := range registry {
		registry[name] = func(ctx context.Context, args runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
			p, err := factory(ctx, args, h)
			if err == nil {
				built[name] = p
			}
			return p, err
		}
	}
	fw, err := frameworkruntime.NewFramework(ctx, registry, profile, frameworkOpts...)
	if err != nil {
		return nil, nil, fmt.Errorf("building framework for profile %q: %w", profile.SchedulerName, err)
	}
	return fw, built, nil
}

// discardWrites is the clientset a simulation's plugins get. They read through the informers;
// they write only in a real scheduling cycle (PreBind, Bind) and, for DynamicResources, in
// Unreserve: reverting the placement of a pod whose claim is reserved for it removes the pod
// from the claim's reservedFor. A simulation reverts placements all the time, so its writes
// succeed without reaching the API server: a consolidation that tries a real pod elsewhere
// must never un-reserve that pod's real claim.
func discardWrites() clientset.Interface {
	cs := fake.NewClientset()
	for _, verb := range []string{"create", "update", "patch", "delete", "delete-collection"} {
		cs.PrependReactor(verb, "*", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
	}
	return cs
}

// newDRAManager mirrors kube-scheduler's construction so DynamicResources sees the same claims,
// slices and classes; its assumed allocations are the engine's own.
func newDRAManager(ctx context.Context, client clientset.Interface, factory informers.SharedInformerFactory) (fwk.SharedDRAManager, error) {
	logger := klog.FromContext(ctx)
	claims := assumecache.NewAssumeCache(logger, factory.Resource().V1().ResourceClaims().Informer(), "ResourceClaim", "", nil)
	opts := resourceslicetracker.Options{
		EnableDeviceTaintRules:   utilfeature.DefaultFeatureGate.Enabled(features.DRADeviceTaintRules),
		EnableConsumableCapacity: utilfeature.DefaultFeatureGate.Enabled(features.DRAConsumableCapacity),
		SliceInformer:            factory.Resource().V1().ResourceSlices(),
		KubeClient:               client,
	}
	if opts.EnableDeviceTaintRules {
		opts.TaintInformer = factory.Resource().V1beta2().DeviceTaintRules()
		opts.ClassInformer = factory.Resource().V1().DeviceClasses()
	}
	tracker, err := resourceslicetracker.StartTracker(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("starting resource slice tracker: %w", err)
	}
	return dynamicresources.NewDRAManager(ctx, claims, tracker, factory), nil
}
