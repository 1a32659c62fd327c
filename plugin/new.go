package plugin

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joinery-dev/joinery/apis"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/apis/karpenter/v1alpha1"
	"github.com/joinery-dev/joinery/internal/featuregates"
	"github.com/joinery-dev/joinery/simulation"
)

// CacheSyncer is a planner whose cluster view comes from informers: the plugin waits for it
// before its first batch.
type CacheSyncer interface {
	WaitForCacheSync(ctx context.Context) bool
}

// Options are what a binary wires into the plugin: the out-of-tree convention passes them in
// the factory's closure rather than through package variables.
type Options struct {
	// NewPlanner builds each profile's solver; nil leaves provisioning disabled, and pods are
	// only reported as pending (disabledMessage).
	NewPlanner PlannerFactory
	// Leader gates provisioning; nil (a scheduler without leader election, tests) means this
	// process always leads.
	Leader Leadership
	// Readiness learns when each provisioning plugin's caches have synced; nil tracks nothing.
	Readiness *SyncTracker
	// FeatureGates are Karpenter's gates (FEATURE_GATES; kube-scheduler's own --feature-gates
	// flag is Kubernetes's). The zero value has every gate at Karpenter's default.
	FeatureGates featuregates.Gates
	// Overrides replace args of every profile's configuration (Karpenter's environment
	// settings); the configuration stays the source of what is not overridden.
	Overrides ArgOverrides
	// WrapRecorder, if set, wraps the scheduler's event recorder for the plugin's events (the
	// binary deduplicates and rate-limits them so a stuck pod cannot flood the API server).
	WrapRecorder func(events.EventRecorder) events.EventRecorder
}

// New returns the plugin factory kube-scheduler calls for each profile that enables the plugin
// (app/internal/scheduler registers it with kube-scheduler's app.WithPlugin(Name, New(opts))).
// Invalid args make it fail, which stops the scheduler with the validation message.
//
// The plugin watches pods through the scheduler's informer factory and NodeClaims through its
// own cache over the scheduler's kubeconfig, builds the solver with opts.NewPlanner, and
// provisions in the background until ctx ends.
func New(opts Options) frameworkruntime.PluginFactory {
	return func(ctx context.Context, obj runtime.Object, handle fwk.Handle) (fwk.Plugin, error) {
		return opts.build(ctx, obj, handle)
	}
}

func (o Options) build(ctx context.Context, obj runtime.Object, handle fwk.Handle) (fwk.Plugin, error) {
	args, err := DecodeArgsWith(obj, handle.ProfileName(), o.Overrides)
	if err != nil {
		return nil, err
	}
	RegisterMetrics()
	logger := klog.FromContext(ctx).WithName(Name).WithValues("profile", handle.ProfileName())
	ctx = klog.NewContext(ctx, logger)

	if handle.KubeConfig() == nil {
		return nil, fmt.Errorf("%s: the framework handle has no kubeconfig", Name)
	}
	// kube-scheduler talks protobuf; joinery's custom resources have no protobuf encoding.
	kubeConfig := rest.CopyConfig(handle.KubeConfig())
	kubeConfig.ContentType = runtime.ContentTypeJSON
	kubeConfig.AcceptContentTypes = runtime.ContentTypeJSON
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("%s: registering Kubernetes types: %w", Name, err)
	}
	if err := apis.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("%s: registering joinery types: %w", Name, err)
	}
	c, err := client.New(kubeConfig, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("%s: building a client: %w", Name, err)
	}
	// One cache of joinery's kinds: the NodeClaims the plugin watches, and the NodeClaims and
	// NodePools the solver reads.
	nodeClaims, err := crcache.New(kubeConfig, crcache.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("%s: building the NodeClaim cache: %w", Name, err)
	}

	var planner simulation.Planner
	if o.NewPlanner == nil {
		logger.Info("provisioning is disabled: pods are only reported as pending", "reason", "no planner factory")
	} else if planner, err = o.NewPlanner(ctx, PlannerOptions{Handle: handle, Args: args, Client: c, Cache: nodeClaims, FeatureGates: o.FeatureGates}); err != nil {
		return nil, fmt.Errorf("%s: building the solver: %w", Name, err)
	}

	podInformer := handle.SharedInformerFactory().Core().V1().Pods()
	var recorder events.EventRecorder = handle.EventRecorder()
	if o.WrapRecorder != nil {
		recorder = o.WrapRecorder(recorder)
	}
	var workloads *workloadListers
	if args.PlanMissingReplicas != nil && *args.PlanMissingReplicas {
		// Registered before kube-scheduler starts its informer factory, which starts these;
		// the claims and classes are VolumeBinding's informers.
		factory := handle.SharedInformerFactory()
		workloads = &workloadListers{
			replicaSets:  factory.Apps().V1().ReplicaSets().Lister(),
			statefulSets: factory.Apps().V1().StatefulSets().Lister(),
			jobs:         factory.Batch().V1().Jobs().Lister(),
			claims:       factory.Core().V1().PersistentVolumeClaims().Lister(),
			classes:      factory.Storage().V1().StorageClasses().Lister(),
		}
	}
	p := newPlugin(ctx, args, handle.ProfileName(), dependencies{
		workloads: workloads,
		pods:      podInformer.Lister(),
		nodeInfos: func() fwk.NodeInfoLister {
			if lister := handle.SnapshotSharedLister(); lister != nil {
				return lister.NodeInfos()
			}
			return nil
		},
		activator:      handle,
		nominator:      handle,
		recorder:       recorder,
		client:         c,
		nodeClaimCache: nodeClaims,
		planner:        planner,
		leader:         o.Leader,
		readiness:      o.Readiness,
	})

	podsWatched, err := podInformer.Informer().AddEventHandler(p.podHandler(ctx))
	if err != nil {
		return nil, fmt.Errorf("%s: watching pods: %w", Name, err)
	}
	ncInformer, err := nodeClaims.GetInformer(ctx, &karpv1.NodeClaim{}, crcache.BlockUntilSynced(false))
	if err != nil {
		return nil, fmt.Errorf("%s: watching NodeClaims (are joinery's CRDs installed?): %w", Name, err)
	}
	nodeClaimsWatched, err := ncInformer.AddEventHandler(p.nodeClaimHandler(ctx))
	if err != nil {
		return nil, fmt.Errorf("%s: watching NodeClaims: %w", Name, err)
	}
	if o.FeatureGates.Enabled(featuregates.CapacityBuffer) {
		if err := p.watchBuffers(ctx, nodeClaims, c, handle); err != nil {
			return nil, fmt.Errorf("%s: %w", Name, err)
		}
	}
	// The solver reads NodePools through the same cache; start their informer with the rest.
	npInformer, err := nodeClaims.GetInformer(ctx, &karpv1.NodePool{}, crcache.BlockUntilSynced(false))
	if err != nil {
		return nil, fmt.Errorf("%s: watching NodePools: %w", Name, err)
	}
	// Changes that can make a pod the last plan refused plannable (requeue.go).
	p.replanWhenOfferingsAnnounced()
	onNodeClaims, onNodes, onNodePools, onClaims := p.requeueHandlers(ctx)
	for _, w := range []struct {
		what     string
		informer interface {
			AddEventHandler(cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error)
		}
		handler cache.ResourceEventHandler
	}{
		{"NodeClaims", ncInformer, onNodeClaims},
		{"Nodes", handle.SharedInformerFactory().Core().V1().Nodes().Informer(), onNodes},
		{"NodePools", npInformer, onNodePools},
		{"PersistentVolumeClaims", handle.SharedInformerFactory().Core().V1().PersistentVolumeClaims().Informer(), onClaims},
		{"PersistentVolumes", handle.SharedInformerFactory().Core().V1().PersistentVolumes().Informer(), p.volumeHandler(ctx)},
	} {
		if _, err := w.informer.AddEventHandler(w.handler); err != nil {
			return nil, fmt.Errorf("%s: watching %s: %w", Name, w.what, err)
		}
	}
	if o.FeatureGates.Enabled(featuregates.NodeOverlay) {
		// The planner applies NodeOverlays; the plugin retries what they may now place.
		overlays, err := nodeClaims.GetInformer(ctx, &v1alpha1.NodeOverlay{}, crcache.BlockUntilSynced(false))
		if err != nil {
			return nil, fmt.Errorf("%s: watching NodeOverlays: %w", Name, err)
		}
		if _, err := overlays.AddEventHandler(p.overlayHandler(ctx)); err != nil {
			return nil, fmt.Errorf("%s: watching NodeOverlays: %w", Name, err)
		}
	}
	go func() {
		if err := nodeClaims.Start(ctx); err != nil {
			logger.Error(err, "NodeClaim cache stopped")
		}
	}()
	if planner != nil {
		// Caches sync in the background: kube-scheduler calls this factory before its health
		// server starts. The batch loop starts once they have.
		synced := func(ctx context.Context) bool {
			if !cache.WaitForCacheSync(ctx.Done(), podsWatched.HasSynced, nodeClaimsWatched.HasSynced, npInformer.HasSynced) {
				return false
			}
			if syncer, ok := planner.(CacheSyncer); ok && !syncer.WaitForCacheSync(ctx) {
				return false
			}
			logger.Info("caches synced; provisioning can start")
			return true
		}
		go p.run(ctx, synced)
	}
	logger.V(1).Info("provisioner ready", "args", args)
	return p, nil
}
