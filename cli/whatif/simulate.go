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
	"github.com/joinery-dev/joinery/simulation/buffer"
)

// DefaultSchedulerName is joinery-scheduler's profile in the deployed manifests.
const DefaultSchedulerName = "joinery"

// Options are the scheduler's configuration the simulation runs with; the binaries' flags of
// the same names. The feature gates are the Cluster's (Load).
type Options struct {
	// SchedulerConfigPath is joinery-scheduler's KubeSchedulerConfiguration (its --config);
	// empty: kube-scheduler's default profile with the JoineryProvisioner's default args.
	SchedulerConfigPath string
	// SchedulerName is the profile; DefaultSchedulerName when empty.
	SchedulerName string
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
	// NodePools are the reasons Reason words, NodePool by NodePool (simulation.Plan.Reasons).
	NodePools []simulation.NodePoolReason `json:"-"`
}

// verdicts maps each NodePool the solver gave a reason for to that reason.
func (p Pending) verdicts() map[string]string {
	out := map[string]string{}
	for _, r := range p.NodePools {
		out[r.NodePool] = r.Message
	}
	return out
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

// plan runs the planner over the pending pods (only over only, when set), as a live cluster
// would: kube-scheduler binds the pods that fit registered nodes, and joinery-scheduler's
// Provisioner plans the rest in one batch with the CapacityBuffers' virtual pods (the
// plugin's PlanWithVirtual), so real pods take existing capacity before buffers do.
func (c *Cluster) plan(ctx context.Context, opts Options, only func(*corev1.Pod) bool) (*simulation.Plan, []*corev1.Pod, error) {
	plan, pods, err := c.planPending(ctx, opts, only, nil)
	if err != nil {
		return nil, nil, err
	}
	_, args, err := opts.profile()
	if err != nil {
		return nil, nil, err
	}
	virtual, err := c.virtualPods(ctx, args.SchedulerNames)
	if err != nil || len(virtual) == 0 {
		return plan, pods, err
	}
	// Bind what fits registered nodes, then plan the rest with the buffers.
	bound, err := c.Snapshot.Clone()
	if err != nil {
		return nil, nil, err
	}
	nodeOf := map[string]string{}
	for _, nc := range c.Snapshot.NodeClaims {
		if nc.Status.NodeName != "" {
			nodeOf[nc.Name] = nc.Status.NodeName
		}
	}
	for _, n := range c.Snapshot.Nodes {
		nodeOf[n.Name] = n.Name
	}
	placed := map[types.UID]string{}
	for i := range bound.Pods {
		p := &bound.Pods[i]
		if node, ok := nodeOf[plan.InFlight[p.UID]]; ok {
			p.Spec.NodeName, p.Status.Phase = node, corev1.PodRunning
			placed[p.UID] = plan.InFlight[p.UID]
		}
	}
	rest, err := Load(bound, c.Gates)
	if err != nil {
		return nil, nil, err
	}
	withBuffers, _, err := rest.planPending(ctx, opts, only, virtual)
	if err != nil {
		return nil, nil, err
	}
	if withBuffers.InFlight == nil {
		withBuffers.InFlight = map[types.UID]string{}
	}
	for uid, target := range placed {
		withBuffers.InFlight[uid] = target
	}
	return withBuffers, pods, nil
}

// planPending plans the pending pods (only over only, when set): registered nodes first
// without virtual pods, else as the Provisioner's batch with them.
func (c *Cluster) planPending(ctx context.Context, opts Options, only func(*corev1.Pod) bool, virtual []*corev1.Pod) (*simulation.Plan, []*corev1.Pod, error) {
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
	if len(virtual) > 0 {
		vp, ok := p.(buffer.Planner)
		if !ok {
			return nil, nil, errors.New("the planner cannot plan capacity buffers")
		}
		plan, _, err := vp.PlanWithVirtual(ctx, pods, virtual)
		if err != nil {
			return nil, nil, fmt.Errorf("planning %d pending pods with %d capacity buffer pods: %w", len(pods), len(virtual), err)
		}
		return plan, pods, nil
	}
	if len(pods) == 0 {
		return &simulation.Plan{InFlight: map[types.UID]string{}}, nil, nil
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
			out.Pending = append(out.Pending, Pending{Pod: podName(p), Reason: why, NodePools: plan.Reasons[uid]})
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
	if c.Gates.Enabled(featuregates.CapacityBuffer) {
		// The pass's own loading: buffers' virtual pods on the nodes that hold them.
		if err := (&disruption.Buffers{Reader: c.Client, Simulator: sim}).Place(ctx, cluster); err != nil {
			return nil, err
		}
	}
	now := c.Now
	consol := disruption.Consolidation{Simulator: sim, InstanceTypes: c.Catalog, SpotToSpot: c.Gates.Enabled(featuregates.SpotToSpotConsolidation), Now: func() time.Time { return now }}
	return &disruptionSetup{cluster: cluster, methods: disruption.GracefulMethods(consol), consol: consol}, nil
}
