package whatif

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/controller/disruption"
	"github.com/joinery-dev/joinery/internal/featuregates"
	"github.com/joinery-dev/joinery/plugin"
	"github.com/joinery-dev/joinery/plugin/planner"
	"github.com/joinery-dev/joinery/scheduling"
	"github.com/joinery-dev/joinery/simulation"
)

// DefaultSchedulerName is joinery-scheduler's profile in the deployed manifests.
const DefaultSchedulerName = "joinery"

// Options are the scheduler's configuration and the controller's gates the simulation runs
// with; the binaries' flags of the same names.
type Options struct {
	// SchedulerConfigPath is joinery-scheduler's KubeSchedulerConfiguration (its --config);
	// empty: kube-scheduler's default profile with the JoineryProvisioner's default args.
	SchedulerConfigPath string
	// SchedulerName is the profile; DefaultSchedulerName when empty.
	SchedulerName string
	// Gates are Karpenter's feature gates as joinery-controller and joinery-scheduler read
	// them (featuregates.NewValue). SpotToSpotConsolidation is consolidation's, NodeOverlay
	// applies the snapshot's NodeOverlays to its catalog, ReservedCapacity off leaves its
	// reserved offerings out, CapacityBuffer plans and keeps room for its CapacityBuffers.
	Gates featuregates.Gates
	// OutOfTree are the scheduler plugins registered with the binary besides the in-tree
	// ones (app.WithPlugin), as joinery-scheduler and joinery-controller register them.
	OutOfTree frameworkruntime.Registry
}

func (o Options) schedulerName() string {
	if o.SchedulerName == "" {
		return DefaultSchedulerName
	}
	return o.SchedulerName
}

// profile returns the scheduler profile and the Provisioner's args in it, loaded as
// joinery-controller loads them (plugin.LoadEngine).
func (o Options) profile() (*config.KubeSchedulerProfile, plugin.ProvisionerArgs, error) {
	engine, err := plugin.LoadEngine(o.SchedulerConfigPath, o.schedulerName(), o.OutOfTree, plugin.ArgOverrides{})
	if err != nil {
		return nil, plugin.ProvisionerArgs{}, err
	}
	return engine.Profile, engine.Args, nil
}

// NodeClaim is a NodeClaim the simulation would create.
type NodeClaim struct {
	NodePool string `json:"nodePool"`
	// InstanceTypes are its instance-type options, cheapest first.
	InstanceTypes []string `json:"instanceTypes"`
	// Zones and CapacityTypes are what its requirements allow (empty: any).
	Zones         []string `json:"zones,omitempty"`
	CapacityTypes []string `json:"capacityTypes,omitempty"`
	// Launch is the offering it would most likely launch with.
	Launch *Offering `json:"launch,omitempty"`
	Pods   []string  `json:"pods"`
}

// Placement is a pending pod that lands on capacity that exists or is launching.
type Placement struct {
	Pod    string `json:"pod"`
	Target string `json:"target"`
}

// Pending is a pod no capacity can take, with the solver's reason.
type Pending struct {
	Pod    string `json:"pod"`
	Reason string `json:"reason"`
}

// Provisioning is what joinery-scheduler would do for the pending pods.
type Provisioning struct {
	NewNodeClaims []NodeClaim `json:"newNodeClaims,omitempty"`
	Placed        []Placement `json:"placed,omitempty"`
	Pending       []Pending   `json:"pending,omitempty"`
}

// Provision plans the snapshot's pending pods with the planner joinery-scheduler builds
// (planner.Config.New over an in-memory framework handle), trying existing nodes first.
func (c *Cluster) Provision(ctx context.Context, opts Options) (*Provisioning, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	plan, pods, err := c.plan(ctx, opts, nil)
	if err != nil {
		return nil, err
	}
	return c.describePlan(ctx, plan, pods)
}

// plan runs the planner over the pending pods (only over only, when set).
func (c *Cluster) plan(ctx context.Context, opts Options, only func(*corev1.Pod) bool) (*simulation.Plan, []*corev1.Pod, error) {
	profile, args, err := opts.profile()
	if err != nil {
		return nil, nil, err
	}
	factory := informers.NewSharedInformerFactory(c.ClientSet, 0)
	lister, err := simulation.NewSnapshot(nil, nil)
	if err != nil {
		return nil, nil, err
	}
	handle, err := simulation.NewFramework(ctx, profile, opts.OutOfTree, simulation.FrameworkOptions{Client: c.ClientSet, InformerFactory: factory, Snapshot: lister})
	if err != nil {
		return nil, nil, fmt.Errorf("building the scheduler framework: %w", err)
	}
	cfg := &planner.Config{
		InstanceTypes: func(client.Client, cloudprovider.Overlay) (cloudprovider.InstanceTypeLister, error) {
			return c.Catalog, nil
		},
		SchedulerConfigPath:           opts.SchedulerConfigPath,
		OutOfTree:                     opts.OutOfTree,
		UnavailableOfferingsNamespace: c.unavailableNamespace,
		Now:                           func() time.Time { return c.Now },
	}
	p, err := cfg.New(ctx, plugin.PlannerOptions{Handle: handle, Args: args, Client: c.Client})
	if err != nil {
		return nil, nil, fmt.Errorf("building the planner: %w", err)
	}
	factory.Start(ctx.Done())
	if syncer, ok := p.(interface{ WaitForCacheSync(context.Context) bool }); ok && !syncer.WaitForCacheSync(ctx) {
		return nil, nil, errors.New("the in-memory informers did not sync")
	}
	dp, ok := p.(interface {
		PlanDisruption(context.Context, []*corev1.Pod) (*simulation.Plan, error)
	})
	if !ok {
		return nil, nil, errors.New("the planner cannot try existing nodes first")
	}
	var pods []*corev1.Pod
	for _, pod := range c.PendingPods(args.SchedulerNames) {
		if only == nil || only(pod) {
			pods = append(pods, pod)
		}
	}
	if len(pods) == 0 {
		return &simulation.Plan{}, nil, nil
	}
	plan, err := dp.PlanDisruption(ctx, pods)
	if err != nil {
		return nil, nil, fmt.Errorf("planning %d pending pods: %w", len(pods), err)
	}
	return plan, pods, nil
}

// PendingPods are the pods joinery-scheduler provisions for: unbound, not finished, not
// deleting, not gated, of one of schedulerNames.
func (c *Cluster) PendingPods(schedulerNames []string) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range c.Snapshot.Pods {
		p := &c.Snapshot.Pods[i]
		name := p.Spec.SchedulerName
		if name == "" {
			name = corev1.DefaultSchedulerName
		}
		if p.Spec.NodeName != "" || p.DeletionTimestamp != nil || len(p.Spec.SchedulingGates) > 0 ||
			scheduling.PodFinished(p) || !slices.Contains(schedulerNames, name) {
			continue
		}
		out = append(out, p.DeepCopy())
	}
	return out
}

func podName(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

func (c *Cluster) describePlan(ctx context.Context, plan *simulation.Plan, pods []*corev1.Pod) (*Provisioning, error) {
	out := &Provisioning{}
	byUID := map[types.UID]*corev1.Pod{}
	for _, p := range pods {
		byUID[p.UID] = p
	}
	for _, planned := range plan.NewNodeClaims {
		nc, err := c.describeNodeClaim(ctx, planned.NodeClaim, planned.Pods)
		if err != nil {
			return nil, err
		}
		out.NewNodeClaims = append(out.NewNodeClaims, nc)
	}
	for uid, target := range plan.InFlight {
		if p := byUID[uid]; p != nil {
			out.Placed = append(out.Placed, Placement{Pod: podName(p), Target: target})
		}
	}
	for uid, why := range plan.Unschedulable {
		if p := byUID[uid]; p != nil {
			out.Pending = append(out.Pending, Pending{Pod: podName(p), Reason: why})
		}
	}
	slices.SortFunc(out.Placed, func(a, b Placement) int { return strings.Compare(a.Pod, b.Pod) })
	slices.SortFunc(out.Pending, func(a, b Pending) int { return strings.Compare(a.Pod, b.Pod) })
	return out, nil
}

// describeNodeClaim summarises an unsaved NodeClaim and the pods it is for.
func (c *Cluster) describeNodeClaim(ctx context.Context, nc *karpv1.NodeClaim, pods []*corev1.Pod) (NodeClaim, error) {
	out := NodeClaim{NodePool: nc.Labels[karpv1.NodePoolLabelKey]}
	for _, r := range nc.Spec.Requirements {
		if r.Operator != corev1.NodeSelectorOpIn {
			continue
		}
		switch r.Key {
		case corev1.LabelInstanceTypeStable:
			out.InstanceTypes = r.Values
		case corev1.LabelTopologyZone:
			out.Zones = sortedCopy(r.Values)
		case karpv1.CapacityTypeLabelKey:
			out.CapacityTypes = sortedCopy(r.Values)
		}
	}
	if o, ok, err := c.ExpectedOffering(ctx, nc); err != nil {
		return NodeClaim{}, err
	} else if ok {
		out.Launch = &o
	}
	for _, p := range pods {
		out.Pods = append(out.Pods, podName(p))
	}
	slices.Sort(out.Pods)
	return out, nil
}

func sortedCopy(values []string) []string {
	out := slices.Clone(values)
	slices.Sort(out)
	return out
}

// disruptionSetup is the controller's disruption machinery over the in-memory cluster.
type disruptionSetup struct {
	cluster *disruption.Cluster
	methods []disruption.Method
	consol  disruption.Consolidation
}

func (c *Cluster) disruptionSetup(ctx context.Context, opts Options) (*disruptionSetup, error) {
	profile, args, err := opts.profile()
	if err != nil {
		return nil, err
	}
	factory := informers.NewSharedInformerFactory(c.ClientSet, 0)
	// The controller's own constructor, with the policies of the same profile.
	sim, err := disruption.NewSimulation(ctx, disruption.SimulationOptions{
		Profile: profile, OutOfTree: opts.OutOfTree, InstanceTypes: c.Catalog, Client: c.ClientSet, InformerFactory: factory, Offerings: c,
		Policies: args.Policies(),
	})
	if err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	for typ, synced := range factory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return nil, fmt.Errorf("the in-memory informer for %v did not sync", typ)
		}
	}
	cluster, err := disruption.LoadCluster(ctx, c.Client)
	if err != nil {
		return nil, err
	}
	now := c.Now
	consol := disruption.Consolidation{Simulator: sim, InstanceTypes: c.Catalog, SpotToSpot: opts.Gates.Enabled(featuregates.SpotToSpotConsolidation), Now: func() time.Time { return now }}
	return &disruptionSetup{cluster: cluster, methods: disruption.GracefulMethods(consol), consol: consol}, nil
}
