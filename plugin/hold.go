package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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
		p.holds.unstick(uid)
	case !podDependentFilters.Has(rejectedBy):
		klog.FromContext(ctx).V(2).Info("pod's node rejects it for good; planning it again",
			"pod", p.refs[uid], "NodeClaim", klog.KRef("", nodeClaim), "rejectedBy", rejectedBy)
		return ""
	case !p.holds.rejectedWithPlan(uid, rejectedBy, p.waits) && !p.replicasComing(uid):
		klog.FromContext(ctx).V(2).Info("no other pod of the plan can still move it on; planning the pod again",
			"pod", p.refs[uid], "NodeClaim", klog.KRef("", nodeClaim), "rejectedBy", rejectedBy)
		return ""
	}
	now := p.clock.Now()
	since, began := p.holds.hold(uid, now)
	if began {
		// Retry the pod when the hold runs out, so it is planned again even if nothing else
		// in the cluster moves.
		p.clock.AfterFunc(p.args.PlanHoldDuration.Duration, func() { p.activateUIDs(ctx, uid) })
		if _, took := p.slots.takenBy[uid]; took && replicaSlotTTL < p.args.PlanHoldDuration.Duration {
			// Held for replicas still to come: look again when their slots expire.
			p.clock.AfterFunc(replicaSlotTTL, func() { p.activateUIDs(ctx, uid) })
		}
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

// notToRetry returns the stuck pods of pod's plans that pod, placed on nodeName, does not
// need retried: retried on every placement of their plan, most held pods of a zone spread
// were only rejected again, each a failed attempt, a status write and an event. Left out are
// the pods whose rejection the placement cannot change (placementCannotAdmit), and of the
// pods it may admit, all but one per node and workload (spreadGroup): PodTopologySpread admits a pod when
// its domain's count is within maxSkew of the emptiest domain's, and one placement raises
// that minimum by one at most, so it lets at most one more of a workload's pods (same
// constraints, same labels) into each other domain. Once that one is placed, its own
// placement retries the next. Callers hold p.mu.
func (p *Plugin) notToRetry(pod *corev1.Pod, nodeName string) sets.Set[types.UID] {
	out := sets.New[types.UID]()
	stuck := p.holds.stuckOfPlan(pod.UID)
	retried := sets.New[string]()
	for _, held := range slices.Sorted(maps.Keys(stuck)) {
		rejectedBy := stuck[held]
		if rejectedBy != names.PodTopologySpread {
			continue
		}
		heldPod, heldNode := p.heldPodOn(held)
		if heldPod == nil {
			continue
		}
		if p.placementCannotAdmit(pod, nodeName, heldPod, heldNode) {
			out.Insert(held)
			continue
		}
		group, ok := spreadGroup(heldPod, heldNode)
		if !ok {
			continue
		}
		if retried.Has(group) {
			out.Insert(held)
			continue
		}
		retried.Insert(group)
	}
	return out
}

// spreadGroup returns the key of the pods that PodTopologySpread judges alike on node: the
// same namespace, labels, spread constraints and node constraints (a workload's pods).
func spreadGroup(pod *corev1.Pod, node string) (string, bool) {
	alike := struct {
		Node, Namespace string
		Labels          map[string]string
		Constraints     []corev1.TopologySpreadConstraint
		NodeSelector    map[string]string
		Affinity        *corev1.Affinity
		Tolerations     []corev1.Toleration
	}{node, pod.Namespace, pod.Labels, pod.Spec.TopologySpreadConstraints, pod.Spec.NodeSelector, pod.Spec.Affinity, pod.Spec.Tolerations}
	key, err := json.Marshal(alike)
	return string(key), err == nil
}

// heldPodOn returns the held pod and the node it is pinned to, or nil when either is not
// known. Callers hold p.mu.
func (p *Plugin) heldPodOn(held types.UID) (*corev1.Pod, string) {
	_, node, ok := p.pinOf(held)
	ref, known := p.refs[held]
	if !ok || node == "" || !known || p.pods == nil {
		return nil, ""
	}
	pod, err := p.pods.Pods(ref.Namespace).Get(ref.Name)
	if err != nil || pod.UID != held {
		return nil, ""
	}
	return pod, node
}

// placementCannotAdmit reports whether pod, placed on nodeName, certainly leaves the
// PodTopologySpread verdict on heldPod's own node, heldNode, as it was. The Filter rejects the
// held pod when its domain holds too many matching pods against the emptiest domain; a
// placement raises that gap or leaves it unless it lands, for some required constraint, in
// another domain (it may raise the minimum) with a pod the constraint counts (the held pod's
// namespace, a label its selector matches). A node not known here may change it.
func (p *Plugin) placementCannotAdmit(pod *corev1.Pod, nodeName string, heldPod *corev1.Pod, heldNode string) bool {
	if heldNode == nodeName {
		return true
	}
	if p.nodeInfos == nil {
		return false
	}
	lister := p.nodeInfos()
	if lister == nil {
		return false
	}
	placedOn, err := lister.Get(nodeName)
	if err != nil || placedOn.Node() == nil {
		return false
	}
	heldOn, err := lister.Get(heldNode)
	if err != nil || heldOn.Node() == nil {
		return false
	}
	for _, c := range heldPod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != corev1.DoNotSchedule {
			continue
		}
		selector, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
		if err != nil {
			return false
		}
		// The stored selector, without matchLabelKeys merged in, matches a superset of what
		// the Filter counts: a pod it does not match is not counted.
		if pod.Namespace != heldPod.Namespace || !selector.Matches(labels.Set(pod.Labels)) {
			continue
		}
		placedIn, placedOK := placedOn.Node().Labels[c.TopologyKey]
		heldIn, heldOK := heldOn.Node().Labels[c.TopologyKey]
		if !placedOK || !heldOK || placedIn != heldIn {
			return false
		}
	}
	return true
}
