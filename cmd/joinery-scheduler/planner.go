package main

import (
	"context"
	"fmt"
	"os"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/kwok"
	"github.com/joinery-dev/joinery/plugin"
	"github.com/joinery-dev/joinery/simulation"
	"github.com/joinery-dev/joinery/simulation/solver"
)

// schedulerConfigPath is the --config file the scheduler runs with: the solver builds its
// simulation framework from the same profile, so its Filters are the scheduler's.
var schedulerConfigPath string

// unavailableOfferingsNamespace is where joinery-controller keeps the unavailable-offerings
// record (its leader-election namespace).
var unavailableOfferingsNamespace = envOr("JOINERY_CONTROLLER_NAMESPACE", "kube-system")

// newPlanner builds the solver for one scheduler profile: the profile's own plugins and args,
// cluster state from the scheduler's informers, instance types from the cloud provider.
func newPlanner(ctx context.Context, opts plugin.PlannerOptions) (simulation.Planner, error) {
	profile, err := schedulerProfile(opts.Handle.ProfileName())
	if err != nil {
		return nil, err
	}
	provider, err := kwok.New(opts.Client, kwok.Options{})
	if err != nil {
		return nil, fmt.Errorf("building the kwok cloud provider: %w", err)
	}
	factory := opts.Handle.SharedInformerFactory()
	state := &informerState{
		client:     opts.Client,
		nodes:      factory.Core().V1().Nodes().Lister(),
		pods:       factory.Core().V1().Pods().Lister(),
		daemonSets: factory.Apps().V1().DaemonSets().Lister(),
	}
	unavailable := &unavailableOfferings{client: opts.Client, namespace: unavailableOfferingsNamespace}
	s, err := solver.New(ctx, solver.Options{
		State:         state,
		InstanceTypes: provider,
		Profile:       profile,
		Framework: simulation.FrameworkOptions{
			Client:          opts.Handle.ClientSet(),
			InformerFactory: factory,
		},
		PreferencePolicy: solver.PreferencePolicy(opts.Args.PreferencePolicy),
		MinValuesPolicy:  solver.MinValuesPolicy(opts.Args.MinValuesPolicy),
		MaxInstanceTypes: int(opts.Args.MaxInstanceTypes),
		Unavailable:      unavailable.contains,
	})
	if err != nil {
		return nil, err
	}
	// The engine's plugins may have asked the factory for informers the scheduler had not.
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return &refreshingPlanner{planner: s, unavailable: unavailable}, nil
}

// schedulerProfile loads the named profile from the scheduler's config file, or the default
// profile when the scheduler runs without one.
func schedulerProfile(name string) (*config.KubeSchedulerProfile, error) {
	if schedulerConfigPath == "" {
		return simulation.DefaultProfile()
	}
	return simulation.LoadProfile(schedulerConfigPath, name)
}

// refreshingPlanner re-reads the unavailable-offerings record before each batch, so offerings
// the controller found exhausted are skipped for the 3 minutes it records.
type refreshingPlanner struct {
	planner     simulation.Planner
	unavailable *unavailableOfferings
}

func (p *refreshingPlanner) Plan(ctx context.Context, pods []*corev1.Pod) (*simulation.Plan, error) {
	if err := p.unavailable.refresh(ctx, time.Now()); err != nil {
		return nil, err
	}
	return p.planner.Plan(ctx, pods)
}

// unavailableOfferings is the scheduler's read-only view of the controller's record.
type unavailableOfferings struct {
	client    client.Client
	namespace string
	current   map[cloudprovider.OfferingKey]time.Time
}

func (u *unavailableOfferings) refresh(ctx context.Context, now time.Time) error {
	var cm corev1.ConfigMap
	err := u.client.Get(ctx, client.ObjectKey{Namespace: u.namespace, Name: cloudprovider.UnavailableOfferingsConfigMap}, &cm)
	switch {
	case apierrors.IsNotFound(err):
		u.current = nil
		return nil
	case err != nil:
		return fmt.Errorf("reading unavailable offerings: %w", err)
	}
	u.current = cloudprovider.ParseUnavailableOfferings(&cm, now)
	return nil
}

func (u *unavailableOfferings) contains(capacityType, instanceType, zone string) bool {
	_, ok := u.current[cloudprovider.OfferingKey{CapacityType: capacityType, InstanceType: instanceType, Zone: zone}]
	return ok
}

// informerState is the solver's view of the cluster: nodes, pods and daemonsets from the
// scheduler's informers, NodePools and NodeClaims read fresh for each batch.
type informerState struct {
	client interface {
		List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error
	}
	nodes interface {
		List(labels.Selector) ([]*corev1.Node, error)
	}
	pods interface {
		List(labels.Selector) ([]*corev1.Pod, error)
	}
	daemonSets interface {
		List(labels.Selector) ([]*appsv1.DaemonSet, error)
	}
}

func (s *informerState) NodePools(ctx context.Context) ([]*karpv1.NodePool, error) {
	var list karpv1.NodePoolList
	if err := s.client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing nodepools: %w", err)
	}
	out := make([]*karpv1.NodePool, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

func (s *informerState) NodeClaims(ctx context.Context) ([]*karpv1.NodeClaim, error) {
	var list karpv1.NodeClaimList
	if err := s.client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing nodeclaims: %w", err)
	}
	out := make([]*karpv1.NodeClaim, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

func (s *informerState) Nodes(context.Context) ([]*corev1.Node, error) {
	return s.nodes.List(labels.Everything())
}

func (s *informerState) Pods(context.Context) ([]*corev1.Pod, error) {
	return s.pods.List(labels.Everything())
}

func (s *informerState) DaemonSets(context.Context) ([]*appsv1.DaemonSet, error) {
	return s.daemonSets.List(labels.Everything())
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}
