package plugin

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
)

var _ fwk.PreFilterPlugin = &Plugin{}

// PreFilter holds a pod that waits for a NodeClaim to that NodeClaim's node. kube-scheduler
// would otherwise bind it to whichever new node became ready first — often one planned for
// another pod, which then finds its own node taken and buys more capacity while the node
// planned for the first stands empty. Until the node registers, the pod is not schedulable at
// all; once it is initialized and the pod still does not fit, PostFilter plans it again.
//
// A replica that arrives while a NodeClaim holds a place planned for it before it existed
// takes that place and waits for it the same way (slots.go). A pod of the batch being
// published waits too while its NodeClaim is not created yet: a batch creates its NodeClaims
// one after the other, for seconds when there are many, and the first ones register at once;
// a pod of a later one, not held, was bound to the first roomy node, and its zone spread then
// counted it where the plan had not, rejecting a planned pod elsewhere.
func (p *Plugin) PreFilter(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	p.mu.Lock()
	nodeClaim, node, ok := p.pinOf(pod.UID)
	if !ok && p.unpublished.Has(pod.UID) {
		p.heldUnpublished.Insert(pod.UID)
		p.mu.Unlock()
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, unpublishedMessage)
	}
	var virtual types.UID
	awaitsSlots := false
	if !ok {
		if nodeClaim, virtual, ok = p.takeSlot(pod); ok {
			node = p.launches.nodeOf(nodeClaim)
		} else {
			awaitsSlots = p.awaitsSlots(pod)
		}
	}
	p.mu.Unlock()
	if awaitsSlots {
		// Retried once they exist (retryForSlots).
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, awaitingSlotsMessage)
	}
	if !ok {
		return nil, nil
	}
	if virtual != "" {
		p.slotTaken(p.ctx, pod, nodeClaim, virtual)
	}
	if node == "" {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, waitingMessage(nodeClaim))
	}
	return &fwk.PreFilterResult{NodeNames: sets.New(node)}, nil
}

// unpublishedMessage is PreFilter's status for a pod whose batch is creating its NodeClaim.
const unpublishedMessage = "waiting for the NodeClaim planned for it to be created"

// awaitingSlotsMessage is PreFilter's status for a replica whose place is being created.
const awaitingSlotsMessage = "waiting for the NodeClaims planned for its workload's replicas"

// PreFilterExtensions implements fwk.PreFilterPlugin; the pin does not depend on other pods.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

var _ fwk.FilterPlugin = &Plugin{}

// Filter keeps a pod that waits for a NodeClaim off every node but that NodeClaim's. PreFilter
// already narrows the nodes, but kube-scheduler tries a pod's nominated node
// (status.nominatedNodeName) first and regardless of PreFilter's result: a nomination left
// from an earlier plan must not take the pod to a node it is no longer planned onto, leaving
// the NodeClaim it now waits for empty. Any other pod is kept off capacity promised to the
// pods that wait for a registered node (filterPromised).
func (p *Plugin) Filter(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	p.mu.Lock()
	nodeClaim, node, ok := p.pinOf(pod.UID)
	p.mu.Unlock()
	if !ok {
		return p.filterPromised(pod, nodeInfo)
	}
	if node != "" && nodeInfo.Node() != nil && nodeInfo.Node().Name == node {
		return nil
	}
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, waitingMessage(nodeClaim))
}

// pinOf returns the NodeClaim pod waits for and that NodeClaim's registered node ("" until it
// has one); ok is false when the pod waits for none. The caller holds p.mu.
func (p *Plugin) pinOf(pod types.UID) (nodeClaim, node string, ok bool) {
	nodeClaim, ok = p.waits.nodeClaimFor(pod)
	if !ok {
		return "", "", false
	}
	return nodeClaim, p.launches.nodeOf(nodeClaim), true
}
