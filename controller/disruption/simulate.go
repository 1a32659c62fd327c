package disruption

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/simulation"
	"github.com/joinery-dev/joinery/simulation/solver"
)

// SimulationOptions build the solver-backed Simulator every disruption path decides with.
type SimulationOptions struct {
	// Profile is the scheduler profile whose Filters decide fits (joinery-scheduler's);
	// OutOfTree the plugins registered with the binary besides the in-tree ones.
	Profile   *config.KubeSchedulerProfile
	OutOfTree frameworkruntime.Registry
	// InstanceTypes is the cloud provider.
	InstanceTypes cloudprovider.InstanceTypeLister
	// Client and InformerFactory back the simulation's framework; start the factory (and
	// wait for its caches) before simulating.
	Client          kubernetes.Interface
	InformerFactory informers.SharedInformerFactory
	// Offerings, when not nil, is read before each simulation (UnavailableSource).
	Offerings UnavailableSource
	// Policies are joinery-scheduler's (its profile's Provisioner args,
	// plugin.ProvisionerArgs.Policies); the solver's defaults when zero.
	Policies solver.Policies
}

// NewSimulation returns the SolverSimulator over a solver built from opts. It is the one
// constructor of the disruption simulation: joinery-controller's disruption paths, `joinery
// simulate` and the tests all build it here, so they cannot plan with different options.
func NewSimulation(ctx context.Context, opts SimulationOptions) (*SolverSimulator, error) {
	solv, err := solver.New(ctx, solver.Options{
		InstanceTypes: opts.InstanceTypes,
		Profile:       opts.Profile,
		OutOfTree:     opts.OutOfTree,
		Framework:     simulation.FrameworkOptions{Client: opts.Client, InformerFactory: opts.InformerFactory},
	}.WithPolicies(opts.Policies))
	if err != nil {
		return nil, fmt.Errorf("building the disruption simulation: %w", err)
	}
	return &SolverSimulator{planner: solv, offerings: opts.Offerings, podInfos: solv.PodInfos()}, nil
}

// PodEvents keeps the simulation's pod state (simulation.PodInfos) up to date from a pod
// informer, so a simulation, the first after start included, does not parse the cluster's
// pods while it loads them. Optional: without it each load builds what it lacks.
func (s *SolverSimulator) PodEvents() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pod, ok := obj.(*corev1.Pod); ok {
				s.podInfos.Observe(pod)
			}
		},
		UpdateFunc: func(_, obj any) {
			if pod, ok := obj.(*corev1.Pod); ok {
				s.podInfos.Observe(pod)
			}
		},
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				s.podInfos.Forget(pod)
			}
		},
	}
}

// Simulation is where the candidates' pods would go if the candidates were gone.
type Simulation struct {
	// Replacements are the new NodeClaims the candidates' pods need (unsaved).
	Replacements []*karpv1.NodeClaim
	// Destinations maps each candidate pod that fits somewhere to its destination.
	Destinations map[types.UID]string
	// Unschedulable maps each candidate pod that fits nowhere, not even on new capacity, to
	// why.
	Unschedulable map[types.UID]string
	// Displaced names a pod of a candidate reserved by an earlier command of the pass that
	// no longer fits on the cluster's nodes once these candidates are gone too ("" when none):
	// the two commands cannot both run.
	Displaced string
	// Raised are, for each replacement of a command chosen earlier in the pass that pods of
	// this simulation land on (by its name in the pass, Cluster.passReplacement), what it must
	// hold with them: its own pods, these and their daemons.
	Raised map[string]corev1.ResourceList
}

// Refusal returns why the simulation refuses the command (a *Refusal; nil when every pod has
// a place it can count on): a pod that fits nowhere, or a pod that would land on a NodeClaim of
// c that is launching, registered but not initialized, or being deleted. Karpenter refuses the
// latter too ("would schedule against uninitialized nodeclaim"): that capacity may never come,
// and the candidate would already be gone.
func (s *Simulation) Refusal(c *Cluster, cands []*Candidate) error {
	if s.Displaced != "" {
		return refused("pod %s of a node an earlier command of this pass removes would no longer fit", s.Displaced)
	}
	for _, cand := range cands {
		for _, p := range cand.Pods {
			if why, ok := s.Unschedulable[p.UID]; ok {
				return refused("pod %s/%s would not schedule: %s", p.Namespace, p.Name, why)
			}
		}
	}
	if c == nil {
		return nil
	}
	var unsettled map[string]bool
	for _, cand := range cands {
		for _, p := range cand.Pods {
			dest, ok := s.Destinations[p.UID]
			if !ok {
				continue
			}
			if unsettled == nil {
				unsettled = c.unsettledNodeClaims()
			}
			if unsettled[dest] {
				if c.launchingReplacement(dest) {
					// Chosen with an earlier command of its pass done, it waits for that
					// command's replacement, as for a budget held by it.
					return &Refusal{Budget: true, Message: fmt.Sprintf("waits for nodeclaim %s, another command's replacement, to initialize (pod %s/%s)", dest, p.Namespace, p.Name)}
				}
				return refused("would schedule against uninitialized nodeclaim %s (pod %s/%s)", dest, p.Namespace, p.Name)
			}
		}
	}
	return nil
}

// unsettledNodeClaims are the NodeClaims no pod may be moved onto: launching (no Node yet),
// not initialized, being deleted, or a candidate of a command the pass chose.
func (c *Cluster) unsettledNodeClaims() map[string]bool {
	out := map[string]bool{}
	for _, nc := range c.NodeClaims {
		n := c.NodeOf[nc.Name]
		if n == nil || !isInitialized(nc) || c.isDeleting(nc) || c.reserved[nc.Name] != nil || c.launched[nc.Name] {
			out[nc.Name] = true
		}
	}
	return out
}

// launchingReplacement reports whether the NodeClaim named name is a disruption command's
// replacement still launching: not initialized and not being deleted.
func (c *Cluster) launchingReplacement(name string) bool {
	for _, nc := range c.NodeClaims {
		if nc.Name == name {
			return nc.Annotations[ReplacementForAnnotationKey] != "" && !isInitialized(nc) && !c.isDeleting(nc)
		}
	}
	return false
}

// Simulator re-plans candidates' pods on the cluster without the candidates.
type Simulator interface {
	Simulate(ctx context.Context, c *Cluster, candidates []*Candidate) (*Simulation, error)
}

// DisruptionPlanner is the solver's entry point for disruption (solver.Solver implements it):
// each call plans on the state it is given.
type DisruptionPlanner interface {
	PlanDisruption(ctx context.Context, state solver.ClusterState, pods []*corev1.Pod) (*simulation.Plan, error)
}

// ForkingPlanner plans several disruptions of one cluster from one loaded snapshot, forking
// it per plan instead of loading the cluster again (solver.Solver implements it).
type ForkingPlanner interface {
	PlanDisruptionWithout(ctx context.Context, key any, base, state solver.ClusterState, removed []string, pods []*corev1.Pod) (*simulation.Plan, error)
}

// VirtualPlanner plans pending pods with CapacityBuffers' virtual pods on the state it is
// given (solver.Solver implements it; buffer.Planner is the same over a planner's own state).
type VirtualPlanner interface {
	PlanWithVirtual(ctx context.Context, state solver.ClusterState, pods, virtual []*corev1.Pod) (*simulation.Plan, sets.Set[types.UID], error)
}

// SolverSimulator runs the provisioning solver — the real kube-scheduler Filters over the
// cluster, launching NodeClaims and new capacity — on a view of the cluster in which the
// candidates are gone and their pods are pending. Pending pods of the cluster are planned
// with them (they compete for the same free capacity); only the candidates' pods decide.
// Each simulation hands the solver its own immutable View, so simulations of different
// clusters may run at once.
type SolverSimulator struct {
	planner   DisruptionPlanner
	offerings UnavailableSource
	// mu guards the fields below.
	mu sync.Mutex
	// unavailable is the record of unavailable offerings the last simulation read.
	unavailable map[cloudprovider.OfferingKey]time.Time
	// base is the cluster a ForkingPlanner keeps loaded (the cluster of the last simulation,
	// without nodes being deleted) with the offerings baseUnavailable records (its topology
	// domains follow them), and baseKey its key.
	base            *Cluster
	baseUnavailable map[cloudprovider.OfferingKey]time.Time
	baseLaunching   []*Command
	baseKey         *int
	predictor       RequestPredictor // volatile requests (volatile.go); nil for none
	// podInfos is the solver's pod state cache, which PodEvents fills (nil without a solver).
	podInfos *simulation.PodInfos
}

// UnavailableSource is the controller's record of offerings that failed to launch
// (state.UnavailableOfferings).
type UnavailableSource interface {
	Unavailable(ctx context.Context) (map[cloudprovider.OfferingKey]time.Time, error)
}

// OfferingUnavailable reports an offering the record read by the last simulation says is
// exhausted (offeringRecord).
func (s *SolverSimulator) OfferingUnavailable(capacityType, instanceType, zone string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return offeringIn(s.unavailable, capacityType, instanceType, zone)
}

// readOfferings reads the record of unavailable offerings (nil without a source) and keeps it
// for OfferingUnavailable.
func (s *SolverSimulator) readOfferings(ctx context.Context) (map[cloudprovider.OfferingKey]time.Time, error) {
	if s.offerings == nil {
		return nil, nil
	}
	unavailable, err := s.offerings.Unavailable(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading unavailable offerings: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unavailable = unavailable
	return unavailable, nil
}

// offeringRecord is a Simulator that knows which offerings are recorded exhausted.
type offeringRecord interface {
	OfferingUnavailable(capacityType, instanceType, zone string) bool
}

// Simulate implements Simulator.
func (s *SolverSimulator) Simulate(ctx context.Context, c *Cluster, cands []*Candidate) (*Simulation, error) {
	unavailable, err := s.readOfferings(ctx)
	if err != nil {
		return nil, err
	}
	view, batch := newView(c, cands, unavailable)
	moving := sets.New[types.UID]()
	for _, cand := range cands {
		for _, p := range cand.Pods {
			moving.Insert(p.UID)
		}
	}
	if moving.Len() == 0 {
		return &Simulation{Destinations: map[types.UID]string{}, Unschedulable: map[types.UID]string{}}, nil
	}
	s.predict(batch, moving)
	plan, err := s.plan(ctx, c, view, cands, batch)
	if err != nil {
		return nil, fmt.Errorf("simulating %d pods of %s: %w", moving.Len(), candidateList(cands), err)
	}
	out := &Simulation{Destinations: map[types.UID]string{}, Unschedulable: map[types.UID]string{}}
	for uid, where := range plan.InFlight {
		if moving.Has(uid) {
			out.Destinations[uid] = where
		}
	}
	for uid, why := range plan.Unschedulable {
		if moving.Has(uid) {
			out.Unschedulable[uid] = why
		}
	}
	out.Displaced = displaced(c, plan)
	for name, requests := range plan.InFlightRequests {
		if _, _, ok := c.passReplacement(name); ok {
			if out.Raised == nil {
				out.Raised = map[string]corev1.ResourceList{}
			}
			out.Raised[name] = requests
		}
	}
	for _, planned := range plan.NewNodeClaims {
		if !slices.ContainsFunc(planned.Pods, func(p *corev1.Pod) bool { return moving.Has(p.UID) }) {
			continue // only pending pods: the Provisioner launches for those itself
		}
		label := replacementLabel(len(out.Replacements))
		for _, p := range planned.Pods {
			if moving.Has(p.UID) {
				out.Destinations[p.UID] = label
			}
		}
		out.Replacements = append(out.Replacements, planned.NodeClaim)
	}
	return out, nil
}

// replacementLabel is the destination of the pods a simulation puts on its i-th replacement
// (Simulation.Destinations).
func replacementLabel(i int) string { return fmt.Sprintf("replacement-%d", i) }

// replacementIndex is i when dest is replacementLabel(i).
func replacementIndex(dest string) (i int, ok bool) {
	rest, found := strings.CutPrefix(dest, "replacement-")
	if !found {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	return i, err == nil && i >= 0
}

// isReplacement reports whether dest names one of a simulation's replacements.
func isReplacement(dest string) bool {
	_, ok := replacementIndex(dest)
	return ok
}

// displaced names the first pod of a reserved candidate (Cluster.reserved) that plan could
// not put on the cluster's nodes: it fits nowhere, or only on new capacity.
func displaced(c *Cluster, plan *simulation.Plan) string {
	if len(c.reserved) == 0 {
		return ""
	}
	onNew := sets.New[types.UID]()
	for _, planned := range plan.NewNodeClaims {
		for _, p := range planned.Pods {
			onNew.Insert(p.UID)
		}
	}
	for _, cand := range c.reservedCandidates() {
		for _, p := range cand.Pods {
			if _, ok := plan.Unschedulable[p.UID]; ok || onNew.Has(p.UID) {
				return p.Namespace + "/" + p.Name
			}
		}
	}
	return ""
}

// plan plans batch on view, c without cands. A ForkingPlanner keeps c loaded between
// simulations (one decision simulates many candidate sets over the same Cluster) and only
// takes the candidates' nodes away per plan.
func (s *SolverSimulator) plan(ctx context.Context, c *Cluster, view *View, cands []*Candidate, batch []*corev1.Pod) (*simulation.Plan, error) {
	fp, ok := s.planner.(ForkingPlanner)
	if !ok {
		return s.planner.PlanDisruption(ctx, view, batch)
	}
	s.mu.Lock()
	if s.base != c || !sameKeys(s.baseUnavailable, view.unavailable) || !slices.Equal(s.baseLaunching, c.launching) {
		// The pass's launching commands are done in the base (newView), so each one the pass
		// chooses loads it again.
		s.base, s.baseUnavailable, s.baseLaunching, s.baseKey = c, view.unavailable, slices.Clone(c.launching), new(int)
	}
	key := s.baseKey
	s.mu.Unlock()
	var removed []string
	for _, cand := range append(c.reservedCandidates(), cands...) {
		// A node going away (a pre-plan's NodeClaim already deleted) is not in the base.
		if cand.Node.DeletionTimestamp == nil && cand.NodeClaim.DeletionTimestamp == nil {
			removed = append(removed, cand.Node.Name)
		}
	}
	return fp.PlanDisruptionWithout(ctx, key, &lazyState{c: c, unavailable: view.unavailable}, view, removed, batch)
}

// forget drops the loaded cluster, so the next simulation loads it again.
func (s *SolverSimulator) forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.base, s.baseKey = nil, nil
}

func candidateList(cands []*Candidate) string {
	names := make([]string, len(cands))
	for i, c := range cands {
		names[i] = c.Name()
	}
	return strings.Join(names, ",")
}
