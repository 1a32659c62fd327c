package solver

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/scheduling"
	"github.com/joinery-dev/joinery/simulation"
)

// Solver plans capacity for pending pods. Each planning call takes the cluster it plans on
// (a ClusterState); calls are serialized, since the solver owns one simulation engine, reset
// to the call's cluster at its start.
type Solver struct {
	opts    Options
	mu      sync.Mutex
	engine  *simulation.Engine
	volumes *volumeTopology
	// base is the key of the cluster PlanDisruptionWithout keeps loaded in the engine (nil:
	// none); forked says a plan runs in a fork of it, so newRun does not load the state.
	base   any
	forked bool
	// exhaustive (tests only) makes tryClaims visit every claim: no room index, no
	// rejections shared between classes, to show they change no plan.
	exhaustive bool
}

// PodInfos is the engine's cache of pod state, for the informers to fill ahead of the
// loads (simulation.PodInfos).
func (s *Solver) PodInfos() *simulation.PodInfos { return s.engine.Snapshot().PodInfos() }

// New builds a solver and its engine. Start opts.Framework.InformerFactory (and wait for its
// caches) after New returns, as for simulation.NewEngine.
func New(ctx context.Context, opts Options) (*Solver, error) {
	if err := opts.defaultAndValidate(); err != nil {
		return nil, fmt.Errorf("solver options: %w", err)
	}
	snapshot, err := simulation.NewSnapshot(nil, nil)
	if err != nil {
		return nil, err
	}
	fwOpts := opts.Framework
	if opts.IgnoreDRARequests {
		exclude := fwOpts.Exclude
		if exclude == nil {
			exclude = []string{simulation.ProvisionerPluginName}
		}
		fwOpts.Exclude = append(slices.Clip(exclude), names.DynamicResources)
	}
	engine, err := simulation.NewEngine(ctx, snapshot, opts.Profile, opts.OutOfTree, fwOpts)
	if err != nil {
		return nil, fmt.Errorf("building simulation engine: %w", err)
	}
	return &Solver{opts: opts, engine: engine, volumes: newVolumeTopology(opts.Framework.InformerFactory)}, nil
}

// Plan decides where pods go: back to kube-scheduler when a registered node takes them now
// (Plan.Retry), onto NodeClaims still launching (Plan.InFlight), onto new NodeClaims
// (Plan.NewNodeClaims), or nowhere (Plan.Unschedulable, with the reason), on the cluster state
// shows.
func (s *Solver) Plan(ctx context.Context, state ClusterState, pods []*corev1.Pod) (*simulation.Plan, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.newRun(ctx, state, pods)
	if err != nil {
		return nil, err
	}
	defer func() {
		// Release the batch's state; the next Plan resets the snapshot anyway.
		_ = s.engine.Reset(nil, nil)
	}()
	if err := r.retryOnRegisteredNodes(ctx); err != nil {
		return nil, err
	}
	err = inRounds(sortedPods(pods), func(pod *corev1.Pod) (bool, error) {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		// A pod tried again drops the reason of its last round; place sets a new one.
		r.settle(pod)
		if err := r.place(ctx, pod); err != nil {
			return false, err
		}
		_, failed := r.plan.Unschedulable[pod.UID]
		return !failed || !waitsForPartners(pod), nil
	})
	if err != nil {
		return nil, err
	}
	return r.finish()
}

// inRounds goes through pods in order with try, which reports whether the pod is settled.
// Pods not settled are tried again, in order, while the round before settled some pod: as
// kube-scheduler retries a pod whose required pod affinity no pod met yet (its partner may
// come later in the batch, say from another namespace).
func inRounds(pods []*corev1.Pod, try func(*corev1.Pod) (bool, error)) error {
	for {
		var waiting []*corev1.Pod
		for _, pod := range pods {
			settled, err := try(pod)
			if err != nil {
				return err
			}
			if !settled {
				waiting = append(waiting, pod)
			}
		}
		if len(waiting) == 0 || len(waiting) == len(pods) {
			return nil
		}
		pods = waiting
	}
}

// waitsForPartners reports whether pod has required pod affinity: whether it fits may depend
// on pods planned after it.
func waitsForPartners(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	return a != nil && a.PodAffinity != nil && len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0
}

// run is the state of one Plan.
type run struct {
	s      *Solver
	engine *simulation.Engine
	// state is the cluster the call plans on.
	state ClusterState
	pools []*pool
	// skipped explains NodePools left out (not ready, no instance types).
	skipped []simulation.NodePoolReason
	claims  []*claim
	// plannedOn maps a pending pod to the in-flight claim it was planned onto earlier.
	plannedOn map[types.UID]*claim
	daemons   []*corev1.Pod
	alloc     allocatables
	memos     map[string]*memo
	// antiAffinityKeys are topology keys of required anti-affinity terms of pods in the
	// snapshot: a pod landing on a claim must see those keys decided, or the term is blind.
	antiAffinityKeys sets.Set[string]
	// topologyKeys are the keys the batch's spread, pod (anti-)affinity and volumes may look
	// at (see isTopologyKey).
	topologyKeys sets.Set[string]
	seq          int
	plan         *simulation.Plan
	batch        sets.Set[types.UID]
	// initializing maps nodes still initializing to their NodeClaims; pods go there first.
	initializing      map[string]string
	initializingNames []string
	// registered are the registered, initialized nodes useRegisteredNodes added to initializing.
	registered sets.Set[string]
	// retryPending: a pending pod that fits a registered node goes to Plan.Retry (Plan,
	// PlanWithVirtual); else to Plan.InFlight (PlanDisruption).
	retryPending bool
	// directBuf, namesBuf and relabelBuf are tryClaims' buffers, reused from pod to pod.
	directBuf, relabelBuf []candidate
	namesBuf              []string
	// csiVolumesOf caches podCSIVolumes.
	csiVolumesOf map[types.UID]map[string]string
	// rooms indexes the claims by room (claimsWithRoom).
	rooms rooms
	// affinityRules are the batch's required pod affinity rules, by their key (see
	// affinityRuleOf); domains counts the pods added during the run per topology domain.
	affinityRules map[string]*affinityRule
	domains       domains
}

// sortedPods orders pods largest first (cpu, then memory), then by namespace and name, so that
// plans are deterministic; VerifyPlan replays pods in the same order.
func sortedPods(pods []*corev1.Pod) []*corev1.Pod {
	type keyed struct {
		pod *corev1.Pod
		req vec
	}
	list := make([]keyed, len(pods))
	for i, p := range pods {
		list[i] = keyed{p, podVec(p)}
	}
	slices.SortStableFunc(list, func(a, b keyed) int {
		return cmp.Or(
			cmp.Compare(b.req.milliCPU, a.req.milliCPU),
			cmp.Compare(b.req.memory, a.req.memory),
			cmp.Compare(a.pod.Namespace, b.pod.Namespace),
			cmp.Compare(a.pod.Name, b.pod.Name),
		)
	})
	out := make([]*corev1.Pod, len(list))
	for i, k := range list {
		out[i] = k.pod
	}
	return out
}

func (s *Solver) newRun(ctx context.Context, st ClusterState, pending []*corev1.Pod) (*run, error) {
	nodePools, err := st.NodePools(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing nodepools: %w", err)
	}
	nodeClaims, err := st.NodeClaims(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing nodeclaims: %w", err)
	}
	nodes, err := st.Nodes(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	pods, err := st.Pods(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	daemonSets, err := st.DaemonSets(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing daemonsets: %w", err)
	}
	nodes, initializing := initializingNodes(nodes, nodeClaims)
	if !s.forked {
		s.base = nil
		if err := s.engine.Reset(nodes, pods); err != nil {
			return nil, fmt.Errorf("loading cluster into the snapshot: %w", err)
		}
	}
	r := &run{
		s:                s,
		engine:           s.engine,
		state:            st,
		plannedOn:        map[types.UID]*claim{},
		alloc:            allocatables{},
		memos:            map[string]*memo{},
		affinityRules:    map[string]*affinityRule{},
		antiAffinityKeys: sets.New[string](),
		topologyKeys:     sets.New[string](),
		batch:            sets.New[types.UID](),
		initializing:     initializing,
		plan: &simulation.Plan{
			InFlight:      map[types.UID]string{},
			Retry:         map[types.UID]string{},
			Unschedulable: map[types.UID]string{},
			Reasons:       map[types.UID][]simulation.NodePoolReason{},
		},
	}
	for _, p := range pending {
		r.batch.Insert(p.UID)
		r.topologyKeys.Insert(topologyKeysOf(p)...)
		r.topologyKeys.Insert(s.volumes.keys(p)...)
	}
	r.domains = newDomains(sets.List(r.topologyKeys))
	for name := range initializing {
		r.initializingNames = append(r.initializingNames, name)
	}
	slices.Sort(r.initializingNames)
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			r.noteAntiAffinity(p)
		}
	}
	r.daemons = daemonPods(daemonSets)
	if r.pools, r.skipped, err = s.readyPools(ctx, nodePools, nodeClaims, s.unavailableIn(st)); err != nil {
		return nil, err
	}
	r.plan.Incompatible = s.incompatible(r.pools)
	if !s.forked { // a forked plan's base has its domains already (loadBase)
		if err := r.addDomains(); err != nil {
			return nil, err
		}
	}
	if err := r.addInFlight(ctx, nodeClaims, nodes, pods); err != nil {
		return nil, err
	}
	return r, nil
}

// noteAntiAffinity records the topology keys of pod's required anti-affinity terms.
func (r *run) noteAntiAffinity(pod *corev1.Pod) {
	if a := pod.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, term := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if term.TopologyKey != corev1.LabelHostname {
				r.antiAffinityKeys.Insert(term.TopologyKey)
			}
		}
	}
}

// isTopologyKey reports whether some pod may count the nodes' values of key as domains (or a
// volume may pin it): a node must then carry a value its NodeClaim is held to, never merely
// one it allows.
func (r *run) isTopologyKey(key string) bool {
	return r.topologyKeys.Has(key) || r.antiAffinityKeys.Has(key)
}

func (r *run) nextName(prefix string) string {
	r.seq++
	return fmt.Sprintf("%s-%d", prefix, r.seq)
}

// isWellKnown reports whether instance types and offerings decide key.
func isWellKnown(key string) bool { return scheduling.IsWellKnownLabel(key) }

// nodePoolOf names the NodePool of a NodeClaim.
func nodePoolOf(nc *karpv1.NodeClaim) string { return nc.Labels[karpv1.NodePoolLabelKey] }
