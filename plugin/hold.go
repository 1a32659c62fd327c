package plugin

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
)

// A pod pinned to its planned node (see PreFilter) can be rejected there once the node is up.
// What happens next depends on why:
//
//   - A rule the pod's own plan cannot outgrow — resources, ports, taints, node affinity or
//     selector, volumes: the node will not take the pod however the plan goes on, so the pod
//     loses its pin and is planned again at once.
//   - A rule that counts other pods — PodTopologySpread, InterPodAffinity: kube-scheduler
//     counts only pods already placed, and the plan that put the pod here also put other pods
//     on nodes that may not be up yet (a zone spread whose first zone came up first). While
//     another pod of the same plan is still on its way, the rejection is the plan half built,
//     not the plan wrong: the pod keeps its pin and is retried whenever a pod of its plan is
//     placed or released. Re-planning it would buy a second node and leave the first empty.
//     The hold ends when no other pod of its plan is still on its way, or PlanHoldDuration
//     after it began; then the pod is planned again.
//
// A node the cycle's snapshot does not hold yet (no status names a Filter), or holds with a
// taint the NodeClaim does not declare (not-ready, unregistered, a startup taint: the snapshot
// lags behind the NodeClaim's Initialized condition), is not a rejection at all, only not yet
// visible: the pod keeps its pin, bounded by PlanHoldDuration, and the node's update requeues
// it.

// podDependentFilters are the Filter plugins whose verdict on a node depends on the pods
// placed elsewhere, which a plan still being realised changes.
var podDependentFilters = sets.New(names.PodTopologySpread, names.InterPodAffinity)

// planBook records which pods were planned together (one batch, one plan), so a pod held to
// its node can tell whether the rest of its plan is still on its way. Plans are known only to
// the process that made them; a pod whose wait was rebuilt from a NodeClaim's annotation (a
// restart, another replica) belongs to no known plan and treats every waiting pod as its plan.
// It is not safe for concurrent use.
type planBook struct {
	next   uint64
	planOf map[types.UID]uint64
	podsOf map[uint64]sets.Set[types.UID]
}

func newPlanBook() *planBook {
	return &planBook{planOf: map[types.UID]uint64{}, podsOf: map[uint64]sets.Set[types.UID]{}}
}

// begin returns the id of a new plan.
func (b *planBook) begin() uint64 {
	b.next++
	return b.next
}

// add records that pods belong to plan; a pod belongs to its latest plan only.
func (b *planBook) add(plan uint64, pods ...types.UID) {
	for _, uid := range pods {
		b.forget(uid)
		b.planOf[uid] = plan
		if b.podsOf[plan] == nil {
			b.podsOf[plan] = sets.New[types.UID]()
		}
		b.podsOf[plan].Insert(uid)
	}
}

// siblings returns the other pods of uid's plan, and whether its plan is known.
func (b *planBook) siblings(uid types.UID) ([]types.UID, bool) {
	plan, ok := b.planOf[uid]
	if !ok {
		return nil, false
	}
	out := make([]types.UID, 0, b.podsOf[plan].Len())
	for other := range b.podsOf[plan] {
		if other != uid {
			out = append(out, other)
		}
	}
	return out, true
}

func (b *planBook) forget(uid types.UID) {
	plan, ok := b.planOf[uid]
	if !ok {
		return
	}
	delete(b.planOf, uid)
	b.podsOf[plan].Delete(uid)
	if b.podsOf[plan].Len() == 0 {
		delete(b.podsOf, plan)
	}
}

// rejectedElsewhere stands for the rejection of a pod this scheduler does not schedule (another
// scheduler marked it Unschedulable): nothing says which rule, so it is taken as final.
const rejectedElsewhere = "another scheduler"

// pinnedNodeRejection returns the Filter plugin that rejected pod on the node it is pinned
// to, or "" when no Filter did (the node is not in the cycle's snapshot yet, or the pod is
// pinned to no node).
func (p *Plugin) pinnedNodeRejection(pod types.UID, statuses fwk.NodeToStatusReader) string {
	if statuses == nil {
		return ""
	}
	p.mu.Lock()
	nodeClaim, ok := p.waits.nodeClaimFor(pod)
	launch := p.launches[nodeClaim]
	p.mu.Unlock()
	if !ok || launch.nodeName == "" {
		return ""
	}
	status := statuses.Get(launch.nodeName)
	if status == nil || status.IsSuccess() {
		return ""
	}
	if status.Plugin() == names.TaintToleration && p.nodeUnsettled(launch) {
		return ""
	}
	return status.Plugin()
}

// nodeUnsettled reports whether the cycle's snapshot holds launch's node with a taint that
// the NodeClaim does not declare: a taint of a node not yet registered, ready or initialized
// (the NodeClaim said Initialized before the scheduler's cache saw the node's update).
func (p *Plugin) nodeUnsettled(launch launchState) bool {
	if p.nodeInfos == nil {
		return false
	}
	lister := p.nodeInfos()
	if lister == nil {
		return false
	}
	info, err := lister.Get(launch.nodeName)
	if err != nil || info.Node() == nil {
		return false
	}
	return slices.ContainsFunc(info.Node().Spec.Taints, func(taint corev1.Taint) bool {
		if taint.Effect == corev1.TaintEffectPreferNoSchedule {
			return false
		}
		return !slices.ContainsFunc(launch.taints, func(own corev1.Taint) bool { return own.MatchTaint(&taint) })
	})
}

// holdPin decides whether a pod whose initialized node rejected it (by rejectedBy, "" when
// unknown) keeps its pin, and starts or continues its hold. It returns the hold's message, or
// "" when the pod is to be planned again. Callers hold p.mu.
func (p *Plugin) holdPin(ctx context.Context, uid types.UID, nodeClaim, rejectedBy string) string {
	switch {
	case rejectedBy == "":
		// Not rejected: the node is not in the scheduler's snapshot yet.
	case !podDependentFilters.Has(rejectedBy):
		return ""
	case !p.planStillArriving(uid):
		return ""
	}
	now := p.clock.Now()
	since, ok := p.held[uid]
	if !ok {
		since = now
		p.held[uid] = now
		// Retry the pod when the hold runs out, so it is planned again even if nothing else
		// in the cluster moves.
		p.clock.AfterFunc(p.args.PlanHoldDuration.Duration, func() { p.activateUIDs(ctx, uid) })
		klog.FromContext(ctx).V(2).Info("pod keeps its pin while its plan is realised",
			"pod", p.refs[uid], "NodeClaim", klog.KRef("", nodeClaim), "rejectedBy", rejectedBy)
	}
	if now.Sub(since) >= p.args.PlanHoldDuration.Duration {
		klog.FromContext(ctx).V(1).Info("hold ran out; planning the pod again",
			"pod", p.refs[uid], "NodeClaim", klog.KRef("", nodeClaim), "held", now.Sub(since).Round(time.Second))
		return ""
	}
	return heldMessage(nodeClaim, rejectedBy)
}

// planStillArriving reports whether another pod of uid's plan still waits for its NodeClaim
// and is not itself held: placing it may change what the Filters that count pods say. Callers
// hold p.mu.
func (p *Plugin) planStillArriving(uid types.UID) bool {
	siblings, known := p.plans.siblings(uid)
	if !known {
		siblings = make([]types.UID, 0, len(p.waits.nodeClaimOf))
		for other := range p.waits.nodeClaimOf {
			if other != uid {
				siblings = append(siblings, other)
			}
		}
	}
	return slices.ContainsFunc(siblings, func(other types.UID) bool {
		_, waiting := p.waits.nodeClaimFor(other)
		_, held := p.held[other]
		return waiting && !held
	})
}

// heldAffectedBy returns the held pods whose decision may change now that the pods in uids
// stopped waiting (placed, released or planned again). Callers hold p.mu.
func (p *Plugin) heldAffectedBy(uids ...types.UID) []types.UID {
	if len(p.held) == 0 || len(uids) == 0 {
		return nil
	}
	plans := sets.New[uint64]()
	for _, uid := range uids {
		if plan, ok := p.plans.planOf[uid]; ok {
			plans.Insert(plan)
		} else {
			plans.Insert(0) // a pod of no known plan may be anyone's sibling
		}
	}
	var out []types.UID
	for held := range p.held {
		plan, ok := p.plans.planOf[held]
		if !ok || plans.Has(0) || plans.Has(plan) {
			out = append(out, held)
		}
	}
	slices.Sort(out)
	return out
}

// activateUIDs moves the unassigned pods among uids to the active queue.
func (p *Plugin) activateUIDs(ctx context.Context, uids ...types.UID) {
	if len(uids) == 0 {
		return
	}
	p.activate(ctx, "", uids)
}

func heldMessage(nodeClaim, rejectedBy string) string {
	if rejectedBy == "" {
		return waitingMessage(nodeClaim)
	}
	return fmt.Sprintf("waiting for NodeClaim %s: its node rejects the pod (%s) until the other pods of its plan are placed", nodeClaim, rejectedBy)
}
