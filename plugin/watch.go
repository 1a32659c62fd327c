package plugin

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/scheduling"
	"github.com/joinery-dev/joinery/simulation"
)

// noNodesMessage is the PodScheduled message kube-scheduler writes when the cluster has no
// node at all (ErrNoNodesAvailable). It then skips PostFilter, so without this watch a
// cluster scaled to zero would never get its first node.
const noNodesMessage = "no nodes available to schedule pods"

// podHandler watches pods: it forgets pods that were bound or deleted, and admits pods that
// need capacity but never reach PostFilter — of any schedulerName in SchedulerNames when the
// cluster has no nodes, and of a schedulerName another scheduler serves, whenever that
// scheduler marked them Unschedulable.
func (p *Plugin) podHandler(ctx context.Context) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.observePod(ctx, obj) },
		UpdateFunc: func(_, obj any) { p.observePod(ctx, obj) },
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				p.times.forget(pod.UID)
				p.forget(ctx, pod.UID)
			}
		},
	}
}

func (p *Plugin) observePod(ctx context.Context, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || !p.names.Has(pod.Spec.SchedulerName) {
		return
	}
	p.times.observe(pod)
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || scheduling.PodFinished(pod) {
		p.forget(ctx, pod.UID)
		return
	}
	if p.needsCapacityWithoutPostFilter(pod) {
		_, retry := p.admit(ctx, pod, unschedulableMessage(pod), rejectedElsewhere, false)
		p.activateUIDs(ctx, retry...)
		return
	}
	p.mu.Lock()
	p.refs[pod.UID] = types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	p.adoptClaim(pod.UID)
	p.mu.Unlock()
}

// needsCapacityWithoutPostFilter reports whether pod is Unschedulable for a reason this
// profile's PostFilter will not see.
func (p *Plugin) needsCapacityWithoutPostFilter(pod *corev1.Pod) bool {
	msg := unschedulableMessage(pod)
	if msg == "" {
		return false
	}
	return pod.Spec.SchedulerName != p.profile || strings.Contains(msg, noNodesMessage)
}

// unschedulableMessage is the message of pod's PodScheduled=False/Unschedulable condition,
// or "" when it has none.
func unschedulableMessage(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			if c.Message == "" {
				return corev1.PodReasonUnschedulable
			}
			return c.Message
		}
	}
	return ""
}

// nodeClaimHandler keeps the wait book equal to the cluster's NodeClaims: a launching
// NodeClaim's planned-pods annotation makes its pods wait (this is how the plan survives a
// restart), and a NodeClaim that is deleted or whose node is initialized releases them; they
// are then retried at once, to land on the new node or be planned again.
func (p *Plugin) nodeClaimHandler(ctx context.Context) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.observeNodeClaim(ctx, obj) },
		UpdateFunc: func(_, obj any) { p.observeNodeClaim(ctx, obj) },
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if nc, ok := obj.(*karpv1.NodeClaim); ok {
				p.launches.deleted(nc.Name)
				p.release(ctx, nc.Name)
			}
		},
	}
}

func (p *Plugin) observeNodeClaim(ctx context.Context, obj any) {
	nc, ok := obj.(*karpv1.NodeClaim)
	if !ok {
		return
	}
	p.launches.observeWrites(nc)
	if nc.DeletionTimestamp != nil {
		p.release(ctx, nc.Name)
		return
	}
	before, launch := p.launches.observe(nc)
	if launch.nodeName != "" && before.nodeName != launch.nodeName {
		p.nominateToNode(ctx, launch.nodeName, p.waitingFor(nc.Name))
	}
	if launch.initialized {
		p.launches.dropClaims(nc.Name)
		// The pods keep waiting, held to this node by PreFilter: retry them now.
		if !before.initialized {
			p.activate(ctx, nc.Name, p.waitingFor(nc.Name))
		}
		return
	}
	planned := simulation.PlannedPods(nc)
	p.mu.Lock()
	p.launches.claim(nc.Name, planned)
	for _, uid := range planned {
		p.adoptClaim(uid)
	}
	missing, corrupt := p.annotationLoss(nc, planned)
	p.mu.Unlock()
	if len(missing) > 0 || corrupt {
		// Not from the informer's handler: it would hold up every other event.
		go p.restorePlannedPods(ctx, nc.Name, missing, corrupt)
	}
}

// adoptClaim makes uid wait for the launching NodeClaim whose planned-pods annotation lists
// it — but only once uid is known as a pod of a schedulerName this plugin serves (p.refs):
// anyone able to patch a NodeClaim could otherwise hold arbitrary pods back. A pod seen after
// the NodeClaim is adopted when it is seen. Callers hold p.mu.
func (p *Plugin) adoptClaim(uid types.UID) {
	nodeClaim, claimed := p.launches.claimOf(uid)
	if !claimed {
		return
	}
	if _, served := p.refs[uid]; !served {
		return
	}
	if current, ok := p.waits.nodeClaimFor(uid); ok && current == nodeClaim {
		return
	}
	p.waits.assign(nodeClaim, uid)
	p.pending.remove(uid)
}

// release ends the waits for nodeClaim and moves the pods that waited to the active queue.
func (p *Plugin) release(ctx context.Context, nodeClaim string) {
	p.mu.Lock()
	// Under p.mu with the waits: a pod seen meanwhile is not adopted by a claim just dropped.
	p.launches.dropClaims(nodeClaim)
	p.slots.dropNodeClaim(nodeClaim)
	uids := p.waits.forgetNodeClaim(nodeClaim)
	// Held pods of the same plans: one of their siblings will not arrive as planned.
	retry := p.holds.unpin(uids...)
	p.mu.Unlock()
	p.activate(ctx, nodeClaim, append(uids, retry...))
}

// waitingFor returns the pods waiting for nodeClaim.
func (p *Plugin) waitingFor(nodeClaim string) []types.UID {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waits.podsWaitingFor(nodeClaim)
}

// activate moves the unassigned pods among uids to the active queue.
func (p *Plugin) activate(ctx context.Context, nodeClaim string, uids []types.UID) {
	p.mu.Lock()
	refs := make([]types.NamespacedName, 0, len(uids))
	for _, uid := range uids {
		if ref, ok := p.refs[uid]; ok {
			refs = append(refs, ref)
		}
	}
	p.mu.Unlock()
	if len(uids) == 0 || p.activator == nil || p.pods == nil {
		return
	}
	toActivate := map[string]*corev1.Pod{}
	for _, ref := range refs {
		if pod, err := p.pods.Pods(ref.Namespace).Get(ref.Name); err == nil && pod.Spec.NodeName == "" {
			toActivate[ref.String()] = pod
		}
	}
	logger := klog.FromContext(ctx)
	if nodeClaim != "" {
		logger.V(2).Info("nodeclaim no longer launching; retrying its pods", "NodeClaim", klog.KRef("", nodeClaim), "pods", len(toActivate))
	} else {
		logger.V(4).Info("retrying held pods", "pods", len(toActivate))
	}
	if len(toActivate) > 0 {
		p.activator.Activate(logger, toActivate)
	}
}

// launching reports whether nc's capacity is still on its way: not being deleted, and its
// node not yet initialized.
func launching(nc *karpv1.NodeClaim) bool {
	return nc.DeletionTimestamp == nil && !meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized)
}

// writeObserveTimeout bounds how long a batch waits for the informer to show the previous
// batch's NodeClaims.
const writeObserveTimeout = 10 * time.Second

// awaitWritesObserved waits until the informer shows every NodeClaim write of earlier batches,
// so the solver, which reads NodeClaims from that informer, counts them (limits, in-flight
// capacity). After writeObserveTimeout it plans anyway, and says so.
func (p *Plugin) awaitWritesObserved(ctx context.Context) {
	if p.launches.writesUnobserved() == 0 {
		return
	}
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, writeObserveTimeout, true, func(context.Context) (bool, error) {
		return p.launches.writesUnobserved() == 0, nil
	})
	if err != nil && ctx.Err() == nil {
		klog.FromContext(ctx).Info("planning before the NodeClaim informer shows every earlier write", "unobserved", p.launches.writesUnobserved(), "waited", writeObserveTimeout)
	}
}

// nominateToNode nominates the unassigned pods among uids to node, their NodeClaim's node that just
// registered, in kube-scheduler's nominator: before any of them is tried there, other pods
// already see the capacity as taken (see Plugin.nomination, which keeps it so).
func (p *Plugin) nominateToNode(ctx context.Context, node string, uids []types.UID) {
	if p.nominator == nil || p.pods == nil || len(uids) == 0 {
		return
	}
	p.mu.Lock()
	refs := make([]types.NamespacedName, 0, len(uids))
	for _, uid := range uids {
		if ref, ok := p.refs[uid]; ok {
			refs = append(refs, ref)
		}
	}
	p.mu.Unlock()
	logger := klog.FromContext(ctx)
	info := &fwk.NominatingInfo{NominatedNodeName: node, NominatingMode: fwk.ModeOverride}
	for _, ref := range refs {
		pod, err := p.pods.Pods(ref.Namespace).Get(ref.Name)
		if err != nil || pod.Spec.NodeName != "" {
			continue
		}
		podInfo, err := framework.NewPodInfo(pod)
		if err != nil {
			logger.Error(err, "nominating a planned pod to its node", "pod", klog.KObj(pod), "node", node)
			continue
		}
		p.nominator.AddNominatedPod(logger, podInfo, info)
	}
	logger.V(4).Info("nominated planned pods to their registered node", "node", node, "pods", len(refs))
}
