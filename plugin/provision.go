package plugin

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/joinery-dev/joinery/scheduling"
	"github.com/joinery-dev/joinery/simulation"
	"github.com/joinery-dev/joinery/simulation/buffer"
)

// run plans a batch whenever the batcher closes a window, until ctx ends. It starts only once
// synced reports the NodeClaims and pods are known, so that after a restart pods already
// planned onto a launching NodeClaim are not planned again, and once this process leads (see
// Leadership): a standby replica keeps its view of pods and NodeClaims current but publishes
// nothing. Its first batch waits for the backlog (awaitBacklog).
func (p *Plugin) run(ctx context.Context, synced func(context.Context) bool) {
	if !synced(ctx) {
		return
	}
	p.synced()
	if p.leader != nil {
		klog.FromContext(ctx).Info("provisioning waits for this scheduler to lead")
		select {
		case <-ctx.Done():
			return
		case <-p.leader.Leading():
		}
		klog.FromContext(ctx).Info("this scheduler leads: provisioning")
	}
	go p.refreshPodMetrics(ctx)
	p.awaitBacklog(ctx)
	for p.batcher.Wait(ctx) {
		p.provisionBatch(ctx)
	}
}

// provisionBatch hands the pending pods to the planner and publishes its plan.
func (p *Plugin) provisionBatch(ctx context.Context) {
	logger := klog.FromContext(ctx)
	pods := p.takeBatch()
	defer func() {
		p.mu.Lock()
		p.planning.Clear()
		p.slots.coming.Clear()
		p.mu.Unlock()
		p.retryForSlots(ctx)
	}()
	virtual := p.virtualPods(ctx)
	// Missing replicas share the virtual-pod cap with the buffers, which come first.
	virtual = append(virtual, p.missingReplicaPods(ctx, pods, buffer.MaxVirtualPods-len(virtual))...)
	if len(pods) == 0 && len(virtual) == 0 {
		return
	}
	p.awaitWritesObserved(ctx)
	start := p.clock.Now()
	p.times.tried(pods, start)
	done := p.measureBatch(ctx, len(pods))
	plan, onExisting, err := p.plan(ctx, pods, virtual)
	done()
	var panicked *planPanic
	switch {
	case errors.As(err, &panicked):
		solverPanics.WithLabelValues(p.profile).Inc()
		logger.Error(err, "planning capacity panicked; quarantining the batch's pods", "pods", len(pods), "quarantine", p.args.QuarantineDuration.Duration, "stack", string(panicked.stack))
		p.quarantine(pods)
		return
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		planTimeouts.WithLabelValues(p.profile).Inc()
		logger.Error(err, "planning capacity ran past planTimeout; the pods stay pending", "pods", len(pods), "planTimeout", p.args.PlanTimeout.Duration)
		return
	case err != nil:
		// The pods stay pending; their next scheduling attempt triggers another batch.
		logger.Error(err, "planning capacity failed", "pods", len(pods))
		return
	}
	p.reportIncompatible(ctx, plan.Incompatible)
	// The gauge counts real pods; a CapacityBuffer's virtual pods report on the buffer instead.
	unschedulable := 0
	for _, pod := range pods {
		if _, ok := plan.Unschedulable[pod.UID]; ok {
			unschedulable++
		}
	}
	unschedulablePods.WithLabelValues(metricController).Set(float64(unschedulable))
	recordEffectiveZones(pods)
	p.replanWhenOfferingsReturn(unschedulable)
	if len(pods) > 0 {
		logger.Info("found provisionable pod(s)", "Pods", formatPods(pods), "duration", p.clock.Since(start))
	}
	// A batch of virtual pods only that fit where they are publishes nothing.
	if len(pods) > 0 || len(plan.NewNodeClaims) > 0 {
		p.publish(ctx, pods, plan)
	}
	p.reportBuffers(ctx, virtual, plan, onExisting)
}

// metricsRefresh is how often the pods' waiting-time gauges are brought up to date.
const metricsRefresh = 5 * time.Second

// refreshPodMetrics keeps the waiting-time gauges of pods current until ctx ends.
func (p *Plugin) refreshPodMetrics(ctx context.Context) {
	ticker := time.NewTicker(metricsRefresh)
	defer ticker.Stop()
	for {
		p.times.refresh(p.clock.Now())
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// measureBatch publishes a batch of n pods as the scheduler's queue and its running time as
// unfinished work until the returned func is called, which observes the batch's duration.
func (p *Plugin) measureBatch(ctx context.Context, n int) func() {
	p.batches++
	id := strconv.FormatUint(p.batches, 10)
	p.mu.Lock()
	ignored := 0
	for uid := range p.quarantined {
		if p.pending.has(uid) {
			ignored++
		}
	}
	p.mu.Unlock()
	ignoredPods.Set(float64(ignored))
	queueDepth.WithLabelValues(metricController, id).Set(float64(n))
	start := p.clock.Now()
	stop := make(chan struct{})
	go func() {
		ticker := time.NewTicker(time.Second)
		defer ticker.Stop()
		for {
			unfinishedWork.WithLabelValues(metricController, id).Set(p.clock.Since(start).Seconds())
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
	return func() {
		close(stop)
		schedulingDuration.WithLabelValues(metricController).Observe(p.clock.Since(start).Seconds())
		queueDepth.DeleteLabelValues(metricController, id)
		unfinishedWork.DeleteLabelValues(metricController, id)
	}
}

// planPanic is a panic of the planner, recovered.
type planPanic struct {
	value any
	stack []byte
}

func (e *planPanic) Error() string { return fmt.Sprintf("the planner panicked: %v", e.value) }

// plan runs the planner with PlanTimeout as its deadline, turning a panic into a *planPanic:
// a bug in the solver must cost one batch, not kube-scheduler.
func (p *Plugin) plan(ctx context.Context, pods, virtual []*corev1.Pod) (plan *simulation.Plan, onExisting sets.Set[types.UID], err error) {
	ctx, cancel := context.WithTimeout(ctx, p.args.PlanTimeout.Duration)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			plan, onExisting, err = nil, nil, &planPanic{value: r, stack: debug.Stack()}
		}
	}()
	if len(virtual) > 0 {
		if vp, ok := p.planner.(buffer.Planner); ok {
			return vp.PlanWithVirtual(ctx, pods, virtual)
		}
	}
	plan, err = p.planner.Plan(ctx, pods)
	return plan, nil, err
}

// quarantine leaves pods out of batches for QuarantineDuration and tells them why. They stay
// pending: once the quarantine ends, their next scheduling attempt plans them again.
func (p *Plugin) quarantine(pods []*corev1.Pod) {
	until := p.clock.Now().Add(p.args.QuarantineDuration.Duration)
	p.mu.Lock()
	for _, pod := range pods {
		p.quarantined[pod.UID] = until
		p.unschedulable[pod.UID] = quarantinedMessage(until)
	}
	p.mu.Unlock()
	for _, pod := range pods {
		p.event(pod, corev1.EventTypeWarning, reasonFailedScheduling, "Provision", "Failed to schedule pod, %s", quarantinedMessage(until))
	}
	// Retry them when it ends rather than at kube-scheduler's next flush of unschedulable pods.
	p.clock.AfterFunc(p.args.QuarantineDuration.Duration, func() { p.activateUIDs(p.ctx, uids(pods)...) })
}

// quarantinedNow reports whether uid is quarantined, and ends a quarantine that is over.
// Callers hold p.mu.
func (p *Plugin) quarantinedNow(uid types.UID) bool {
	until, ok := p.quarantined[uid]
	if !ok {
		return false
	}
	if p.clock.Now().Before(until) {
		return true
	}
	delete(p.quarantined, uid)
	delete(p.unschedulable, uid)
	return false
}

// takeBatch returns the pending pods as they are now: it drops pods that were deleted,
// recreated, bound or planned meanwhile. A replica whose workload has a free slot takes it
// instead (takeSlot) and is retried to go there: it went through PostFilter before the batch
// that made the slots published them, and planned again it would get a second place while its
// slot stayed free, its zone counting both (a zone spread then rejected another replica at its
// own slot, which was planned elsewhere and left a NodeClaim empty). PreFilter takes slots too,
// but a pod reaches it only when the cluster has a node, and only once it is retried.
func (p *Plugin) takeBatch() []*corev1.Pod {
	var pods []*corev1.Pod
	var took []takenSlot
	p.mu.Lock()
	for _, entry := range p.pending.list() {
		pod, err := p.pods.Pods(entry.namespace).Get(entry.name)
		_, waiting := p.waits.nodeClaimFor(entry.uid)
		if err != nil || pod.UID != entry.uid || pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || scheduling.PodFinished(pod) || waiting {
			p.pending.remove(entry.uid)
			continue
		}
		if p.quarantinedNow(entry.uid) {
			continue
		}
		if nodeClaim, virtual, ok := p.takeSlot(pod); ok {
			took = append(took, takenSlot{pod: pod, nodeClaim: nodeClaim, virtual: virtual})
			continue
		}
		p.planning.Insert(entry.uid)
		pods = append(pods, pod)
	}
	p.mu.Unlock()
	if len(took) > 0 {
		retry := make([]types.UID, len(took))
		for i, t := range took {
			p.slotTaken(p.ctx, t.pod, t.nodeClaim, t.virtual)
			retry[i] = t.pod.UID
		}
		p.activateUIDs(p.ctx, retry...)
	}
	return pods
}

// takenSlot is a slot a pending replica took: the virtual pod it replaces on nodeClaim.
type takenSlot struct {
	pod       *corev1.Pod
	nodeClaim string
	virtual   types.UID
}
