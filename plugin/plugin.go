package plugin

import (
	"context"
	"sync"
	"time"

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
	clock   clock.WithDelayedExecution

	pods      corelisters.PodLister
	nodeInfos func() fwk.NodeInfoLister // the cycle's snapshot, for PostFilter messages
	activator fwk.PodActivator
	nominator fwk.PodNominator
	recorder  events.EventRecorder
	client    client.Client
	// nodeClaimCache reads NodeClaims as the plugin's informer has them (nil: read client).
	nodeClaimCache client.Reader
	// planner is nil when the plugin was built without a planner factory: pods are then only
	// reported as pending.
	planner simulation.Planner
	batcher *Batcher
	// ctx is the plugin's lifetime (the factory's context), for work that outlives a scheduling
	// cycle.
	ctx context.Context
	// leader gates the batch loop; nil means always leading.
	leader Leadership
	// synced tells the readiness tracker that the caches have synced.
	synced func()
	// times follows pods for the provisioning metrics; batches numbers the batches planned
	// (the batch loop's own).
	times   *podTimes
	batches uint64

	// mu guards the pods' state: which pods need capacity (pending), which wait for which
	// NodeClaim (waits), why the last plan refused a pod, the pods seen, and the quarantined.
	// Admitting, reserving and forgetting a pod change several of these at once, and the
	// holds with them, so they share this lock. Lock order: mu, then holds.mu or
	// launches.mu; the two books call nothing outside themselves while they hold their own.
	mu            sync.Mutex
	pending       *pendingSet
	waits         *waitBook
	unschedulable map[types.UID]string               // the latest plan's reason per pod
	refs          map[types.UID]types.NamespacedName // unassigned pods seen, to activate them by UID
	quarantined   map[types.UID]time.Time            // pods of a batch whose planning panicked, until when
	planning      sets.Set[types.UID]                // the pods of the batch being planned and published
	// unpublished are the pods the batch being published planned onto NodeClaims it has not
	// created or recorded them on yet (PreFilter holds them), and heldUnpublished those
	// PreFilter held, retried once the batch is published.
	unpublished, heldUnpublished sets.Set[types.UID]

	// slots are the places batches planned for replicas not created yet (slots.go).
	slots *slotBook
	// slotWrites records taken slots on their NodeClaims, off the scheduling cycle.
	slotWrites *slotWriter

	// holds keeps the pins their nodes rejected and the plans that decide how long (holds.go).
	holds *holdBook
	// launches follows the NodeClaims: their nodes, their planned-pods annotations and this
	// process's writes to them (launches.go).
	launches *launchTracker

	// buffers reads CapacityBuffers (gate CapacityBuffer); nil with the gate off.
	buffers *bufferSource
	// workloads reads the controllers of the batch's pods (planMissingReplicas); nil with it off.
	workloads *workloadListers
	// offerings plans refused pods again when a skipped unavailable offering expires.
	offerings offeringTimer
}

var (
	_ fwk.PostFilterPlugin  = &Plugin{}
	_ fwk.ReservePlugin     = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
)

// dependencies are what the plugin factory takes from the framework handle, separated so
// tests can build a Plugin without a running scheduler.
type dependencies struct {
	clock     clock.WithDelayedExecution
	pods      corelisters.PodLister
	nodeInfos func() fwk.NodeInfoLister
	activator fwk.PodActivator
	nominator fwk.PodNominator
	recorder  events.EventRecorder
	client    client.Client
	// nodeClaimCache is the NodeClaim informer's cache; nil reads through client.
	nodeClaimCache client.Reader
	planner        simulation.Planner
	leader         Leadership
	readiness      *SyncTracker
	// workloads is nil unless planMissingReplicas.
	workloads *workloadListers
}

func newPlugin(ctx context.Context, args ProvisionerArgs, profile string, deps dependencies) *Plugin {
	if deps.clock == nil {
		deps.clock = clock.RealClock{}
	}
	p := &Plugin{
		args:            args,
		profile:         profile,
		names:           sets.New(args.SchedulerNames...),
		clock:           deps.clock,
		pods:            deps.pods,
		nodeInfos:       deps.nodeInfos,
		activator:       deps.activator,
		nominator:       deps.nominator,
		recorder:        deps.recorder,
		client:          deps.client,
		nodeClaimCache:  deps.nodeClaimCache,
		planner:         deps.planner,
		leader:          deps.leader,
		workloads:       deps.workloads,
		synced:          func() {},
		batcher:         NewBatcher(deps.clock, args.BatchIdleDuration.Duration, args.BatchMaxDuration.Duration),
		pending:         newPendingSet(),
		waits:           newWaitBook(),
		slots:           newSlotBook(),
		slotWrites:      newSlotWriter(),
		unschedulable:   map[types.UID]string{},
		refs:            map[types.UID]types.NamespacedName{},
		launches:        newLaunchTracker(),
		holds:           newHoldBook(),
		quarantined:     map[types.UID]time.Time{},
		planning:        sets.New[types.UID](),
		unpublished:     sets.New[types.UID](),
		heldUnpublished: sets.New[types.UID](),
		times:           newPodTimes(),
		ctx:             ctx,
	}
	if deps.planner != nil {
		// Only a plugin that provisions syncs caches the batch loop waits for.
		p.synced = deps.readiness.register()
	}
	return p
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
	rejectedBy := p.pinnedNodeRejection(pod.UID, statuses)
	msg, retry := p.admit(ctx, pod, filterReasons(statuses, nodes), rejectedBy, true)
	p.activateUIDs(ctx, retry...)
	return p.nomination(pod), fwk.NewStatus(fwk.Unschedulable, msg)
}

// nomination is what PostFilter tells kube-scheduler about the node pod is pinned to. A pod
// waiting for a registered node is nominated to it, so kube-scheduler counts it there when it
// filters other pods (of no higher priority): they do not take the capacity planned for it,
// and topology spread and pod affinity count it in its node's domains. A pod pinned to no
// node clears any nomination (its plan was dropped). DefaultPreemption, the next PostFilter,
// overrides it with no node when it finds no victims, so the capacity itself is kept by
// Filter (filterPromised); the nomination is what other tools (and kubectl) see.
func (p *Plugin) nomination(pod *corev1.Pod) *fwk.PostFilterResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, node, _ := p.pinOf(pod.UID)
	if node == "" && pod.Status.NominatedNodeName == "" {
		return nil
	}
	return &fwk.PostFilterResult{NominatingInfo: &fwk.NominatingInfo{NominatedNodeName: node, NominatingMode: fwk.ModeOverride}}
}

// admit records that pod needs capacity and returns the message describing its state, and
// the held pods to retry because pod left its plan. A pod already waiting for a launching
// NodeClaim is not planned again; one whose initialized node rejected it (by the Filter
// rejectedBy, "" when none did) is planned again unless holdPin keeps its pin.
func (p *Plugin) admit(ctx context.Context, pod *corev1.Pod, reasons, rejectedBy string, alwaysTrigger bool) (string, []types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refs[pod.UID] = types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	p.adoptClaim(pod.UID)
	var retry []types.UID
	if nodeClaim, ok := p.waits.nodeClaimFor(pod.UID); ok {
		if !p.launches.launched(nodeClaim).initialized {
			return waitingMessage(nodeClaim), nil
		}
		if msg := p.holdPin(ctx, pod.UID, nodeClaim, rejectedBy); msg != "" {
			return msg, nil
		}
		// Its node is up and still rejects it for good: the capacity went to another pod, or
		// the hold ran out. Plan again.
		retry = p.leavePin(pod.UID)
	}
	added := p.pending.add(pod, reasons, p.clock.Now())
	if added {
		p.times.seen(pod, p.clock.Now())
		klog.FromContext(ctx).V(4).Info("pod pending for capacity", "pod", klog.KObj(pod), "reasons", reasons)
	}
	if p.planner == nil {
		return disabledMessage, retry
	}
	// A retried pod triggers too, so pods left unschedulable by the last plan are planned
	// again (a NodePool may have appeared) at most every BatchMaxDuration.
	if (added || alwaysTrigger) && !p.quarantinedNow(pod.UID) {
		p.batcher.Trigger()
	}
	if reason, ok := p.unschedulable[pod.UID]; ok {
		return reason, retry
	}
	return batchingMessage(p.pending.len()), retry
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
func (p *Plugin) Reserve(_ context.Context, state fwk.CycleState, pod *corev1.Pod, nodeName string) *fwk.Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := &reservation{}
	if entry, ok := p.pending.remove(pod.UID); ok {
		r.pending = &entry
	}
	var retry []types.UID
	if nodeClaim, ok := p.waits.nodeClaimFor(pod.UID); ok {
		r.nodeClaim = nodeClaim
		p.waits.forgetPod(pod.UID)
		// A pod of a plan is placed: held pods of the plan may fit now, or their plan is
		// complete and they are to be planned again.
		retry = p.holds.placed(pod.UID, p.notToRetry(pod, nodeName), p.waits)
	}
	if reason, ok := p.unschedulable[pod.UID]; ok {
		r.unschedulable = &reason
		delete(p.unschedulable, pod.UID)
	}
	state.Write(reservationKey, r)
	if len(retry) > 0 {
		// Not from the scheduling cycle itself: it holds the queue's attention until Reserve
		// returns, and the placed pod is assumed in the cache by the time the others run.
		go p.activateUIDs(p.ctx, retry...)
	}
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
func (p *Plugin) forget(ctx context.Context, uid types.UID) {
	p.mu.Lock()
	p.pending.remove(uid)
	_, waited := p.waits.nodeClaimFor(uid)
	p.waits.forgetPod(uid)
	var retry []types.UID
	if waited {
		// A pod that waited for nothing holds no pin.
		retry = p.holds.unpin(uid)
	}
	p.holds.leavePlan(uid)
	p.launches.dropClaim(uid)
	delete(p.quarantined, uid)
	delete(p.unschedulable, uid)
	delete(p.refs, uid)
	p.slots.forgetPod(uid)
	p.mu.Unlock()
	p.activateUIDs(ctx, retry...)
}
