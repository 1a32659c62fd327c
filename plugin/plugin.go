package plugin

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joinery-dev/joinery/simulation"
)

// Name is the plugin's name in the KubeSchedulerConfiguration.
const Name = simulation.ProvisionerPluginName

// Plugin is joinery's Provisioner: pods that fail every Filter join a pending set, a batcher
// hands the set to the solver, and the NodeClaims it plans are published.
//
// kube-scheduler builds one Plugin per profile that enables it.
type Plugin struct {
	args    ProvisionerArgs
	profile string
	names   sets.Set[string]
	clock   clock.Clock

	pods      corelisters.PodLister
	nodeInfos func() fwk.NodeInfoLister // the cycle's snapshot, for PostFilter messages
	activator fwk.PodActivator
	recorder  events.EventRecorder
	client    client.Client
	// planner is nil when no solver is registered: pods are then only reported as pending.
	planner simulation.Planner
	batcher *Batcher

	mu            sync.Mutex
	pending       *pendingSet
	waits         *waitBook
	unschedulable map[types.UID]string               // the latest plan's reason per pod
	refs          map[types.UID]types.NamespacedName // unassigned pods seen, to activate them by UID
	launches      map[string]launchState             // NodeClaims by name: their node, once known
}

var (
	_ fwk.PostFilterPlugin  = &Plugin{}
	_ fwk.ReservePlugin     = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
)

// dependencies are what New takes from the framework handle, separated so tests can build a
// Plugin without a running scheduler.
type dependencies struct {
	clock     clock.Clock
	pods      corelisters.PodLister
	nodeInfos func() fwk.NodeInfoLister
	activator fwk.PodActivator
	recorder  events.EventRecorder
	client    client.Client
	planner   simulation.Planner
}

func newPlugin(args ProvisionerArgs, profile string, deps dependencies) *Plugin {
	if deps.clock == nil {
		deps.clock = clock.RealClock{}
	}
	return &Plugin{
		args:          args,
		profile:       profile,
		names:         sets.New(args.SchedulerNames...),
		clock:         deps.clock,
		pods:          deps.pods,
		nodeInfos:     deps.nodeInfos,
		activator:     deps.activator,
		recorder:      deps.recorder,
		client:        deps.client,
		planner:       deps.planner,
		batcher:       NewBatcher(deps.clock, args.BatchIdleDuration.Duration, args.BatchMaxDuration.Duration),
		pending:       newPendingSet(),
		waits:         newWaitBook(),
		unschedulable: map[types.UID]string{},
		refs:          map[types.UID]types.NamespacedName{},
		launches:      map[string]launchState{},
	}
}

// Name implements fwk.Plugin.
func (p *Plugin) Name() string { return Name }

// PostFilter adds a pod that failed every Filter to the pending set and says what joinery is
// doing about it. It returns Unschedulable, never UnschedulableAndUnresolvable, and never
// Success: it creates capacity for a later cycle and leaves preemption (the next PostFilter
// plugin) its turn.
func (p *Plugin) PostFilter(ctx context.Context, _ fwk.CycleState, pod *corev1.Pod, statuses fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	if !p.names.Has(pod.Spec.SchedulerName) {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	var nodes fwk.NodeInfoLister
	if p.nodeInfos != nil {
		nodes = p.nodeInfos()
	}
	msg := p.admit(ctx, pod, filterReasons(statuses, nodes), true)
	return nil, fwk.NewStatus(fwk.Unschedulable, msg)
}

// admit records that pod needs capacity and returns the message describing its state. A pod
// already waiting for a launching NodeClaim is not planned again.
func (p *Plugin) admit(ctx context.Context, pod *corev1.Pod, reasons string, alwaysTrigger bool) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refs[pod.UID] = types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	if nodeClaim, ok := p.waits.nodeClaimFor(pod.UID); ok {
		if !p.launches[nodeClaim].initialized {
			return waitingMessage(nodeClaim)
		}
		// Its node is up and still rejects it: the capacity went to another pod. Plan again.
		p.waits.forgetPod(pod.UID)
	}
	added := p.pending.add(pod, reasons, p.clock.Now())
	if added {
		klog.FromContext(ctx).V(4).Info("pod pending for capacity", "pod", klog.KObj(pod), "reasons", reasons)
	}
	if p.planner == nil {
		return disabledMessage
	}
	// A retried pod triggers too, so pods left unschedulable by the last plan are planned
	// again (a NodePool may have appeared) at most every BatchMaxDuration.
	if added || alwaysTrigger {
		p.batcher.Trigger()
	}
	if reason, ok := p.unschedulable[pod.UID]; ok {
		return reason
	}
	return batchingMessage(p.pending.len())
}

// reservationKey stores, in the cycle state, what Reserve took from the plan.
const reservationKey fwk.StateKey = Name + "/reservation"

// reservation is what Reserve removed for a pod, for Unreserve to put back.
type reservation struct {
	pending       *pendingPod
	nodeClaim     string
	unschedulable *string
}

func (r *reservation) Clone() fwk.StateData { return r }

// Reserve takes a pod that found a node out of the plan: it no longer needs capacity.
func (p *Plugin) Reserve(_ context.Context, state fwk.CycleState, pod *corev1.Pod, _ string) *fwk.Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := &reservation{}
	if entry, ok := p.pending.remove(pod.UID); ok {
		r.pending = &entry
	}
	if nodeClaim, ok := p.waits.nodeClaimFor(pod.UID); ok {
		r.nodeClaim = nodeClaim
		p.waits.forgetPod(pod.UID)
	}
	if reason, ok := p.unschedulable[pod.UID]; ok {
		r.unschedulable = &reason
		delete(p.unschedulable, pod.UID)
	}
	state.Write(reservationKey, r)
	return nil
}

// Unreserve puts a pod whose binding failed back where Reserve found it.
func (p *Plugin) Unreserve(_ context.Context, state fwk.CycleState, pod *corev1.Pod, _ string) {
	data, err := state.Read(reservationKey)
	if err != nil {
		return
	}
	r, ok := data.(*reservation)
	if !ok {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.nodeClaim != "" {
		p.waits.assign(r.nodeClaim, pod.UID)
	}
	if r.unschedulable != nil {
		p.unschedulable[pod.UID] = *r.unschedulable
	}
	if r.pending != nil && r.nodeClaim == "" {
		p.pending.restore(*r.pending)
		if p.planner != nil {
			p.batcher.Trigger()
		}
	}
}

// forget drops every trace of a pod that was scheduled, bound or deleted.
func (p *Plugin) forget(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending.remove(uid)
	p.waits.forgetPod(uid)
	delete(p.unschedulable, uid)
	delete(p.refs, uid)
}
