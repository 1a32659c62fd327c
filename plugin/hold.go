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
//     placed or released. A plan's pods are the batch's and those that were still on their
//     way to other NodeClaims when it was made: the solver counted them where they were
//     planned. Re-planning it would buy a second node and leave the first empty.
//     The hold ends when no other pod of its plan can still move it on — every other pod
//     of the plan is placed, gone, or rejected since it was last retried — or PlanHoldDuration
//     after it began; then the pod is planned again. Meanwhile the node's capacity stays the
//     held pod's: Filter keeps other pods off it (promised.go).
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
	// inFlight are, per plan, the pods that waited for other NodeClaims when it was made: the
	// solver counted them where they were planned (zones, hostnames), so the plan relies on
	// them arriving as much as on its own pods.
	inFlight map[uint64]sets.Set[types.UID]
	// later are, per plan, the plans made afterwards that counted its pods in flight: a pod
	// of the earlier plan relies on their pods as much (a zone one of them fills is a zone
	// the earlier pod's spread waits for), so the relation is kept both ways.
	later map[uint64]sets.Set[uint64]
}

func newPlanBook() *planBook {
	return &planBook{
		planOf: map[types.UID]uint64{}, podsOf: map[uint64]sets.Set[types.UID]{},
		inFlight: map[uint64]sets.Set[types.UID]{}, later: map[uint64]sets.Set[uint64]{},
	}
}

// begin returns the id of a new plan made while the pods in inFlight waited for NodeClaims.
func (b *planBook) begin(inFlight sets.Set[types.UID]) uint64 {
	b.next++
	if inFlight.Len() > 0 {
		b.inFlight[b.next] = inFlight
	}
	for uid := range inFlight {
		earlier, ok := b.planOf[uid]
		if !ok {
			continue
		}
		if b.later[earlier] == nil {
			b.later[earlier] = sets.New[uint64]()
		}
		b.later[earlier].Insert(b.next)
	}
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
	out := make([]types.UID, 0, b.podsOf[plan].Len()+b.inFlight[plan].Len())
	for other := range b.podsOf[plan] {
		if other != uid {
			out = append(out, other)
		}
	}
	for other := range b.inFlight[plan] {
		if other != uid {
			out = append(out, other)
		}
	}
	for later := range b.later[plan] {
		for other := range b.podsOf[later] {
			if other != uid {
				out = append(out, other)
			}
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
		delete(b.inFlight, plan)
		delete(b.later, plan)
	}
}

// rejectedElsewhere stands for the rejection of a pod this scheduler does not schedule (another
// scheduler marked it Unschedulable): nothing says which rule, so it is taken as final.
const rejectedElsewhere = "another scheduler"

// pinnedNodeRejection returns the Filter plugin that rejected pod on the node it is pinned
// to, or "" when no Filter did (the node is not in the cycle's snapshot yet, the pod is
// pinned to no node, or the cycle's own pin, older than the NodeClaim's latest update, kept
// it off).
func (p *Plugin) pinnedNodeRejection(pod types.UID, statuses fwk.NodeToStatusReader) string {
	if statuses == nil {
		return ""
	}
	p.mu.Lock()
	nodeClaim, ok := p.waits.nodeClaimFor(pod)
	launch := p.launches.launched(nodeClaim)
	p.mu.Unlock()
	if !ok || launch.nodeName == "" {
		return ""
	}
	status := statuses.Get(launch.nodeName)
	if status == nil || status.IsSuccess() {
		return ""
	}
	if status.Plugin() == Name {
		// The pin itself kept the pod off: the cycle began before the NodeClaim named (or
		// initialized) this node — PreFilter found no node yet — and the NodeClaim's update
		// arrived before PostFilter. The node was never tried.
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
		p.stuck.Delete(uid)
	case !podDependentFilters.Has(rejectedBy):
		klog.FromContext(ctx).V(2).Info("pod's node rejects it for good; planning it again",
			"pod", p.refs[uid], "NodeClaim", klog.KRef("", nodeClaim), "rejectedBy", rejectedBy)
		return ""
	default:
		// Rejected with the plan as far as it got: until another of its pods is placed (and
		// this one is retried), it cannot move the rest of its plan on.
		p.stuck.Insert(uid)
		if !p.planStillArriving(uid) {
			klog.FromContext(ctx).V(2).Info("no other pod of the plan can still move it on; planning the pod again",
				"pod", p.refs[uid], "NodeClaim", klog.KRef("", nodeClaim), "rejectedBy", rejectedBy)
			return ""
		}
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
// and may still be placed: placing it may change what the Filters that count pods say. A held
// pod is not stuck for good: it is retried whenever a pod of its plan is placed, and one whose
// retry is still queued (behind this pod's) may well fit now. Only pods rejected since their
// last retry cannot move the plan on; when every waiting pod of the plan is such a pod, the
// plan cannot be completed as it stands. (Counting every held pod as stuck released whole
// plans at once: the first of a round of retries saw all the others held.) Callers hold p.mu.
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
		return waiting && !p.stuck.Has(other)
	})
}

// heldAffectedBy returns the held pods whose decision may change now that the pods in uids
// stopped waiting (placed, released or planned again). Callers hold p.mu.
func (p *Plugin) heldAffectedBy(uids ...types.UID) []types.UID {
	if len(p.held) == 0 || len(uids) == 0 {
		return nil
	}
	gone := sets.New(uids...)
	var out []types.UID
	for held := range p.held {
		siblings, known := p.plans.siblings(held)
		// A pod of no known plan counts every waiting pod as its plan.
		if !known || slices.ContainsFunc(siblings, gone.Has) {
			out = append(out, held)
			// Retried by the caller: it may fit now.
			p.stuck.Delete(held)
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
