package plugin

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"
)

// A registered node of a NodeClaim is promised to the pods still waiting for it: the solver
// planned them there and counts them there (defect 3), and PreFilter holds them to it. Until
// they bind, kube-scheduler sees free capacity, and would hand it to any other pod — a pod
// not yet planned, or one of a later wave — whereupon the waiting pod is rejected by its own
// node (resources: planned again at once; anti-affinity: held until its plan is complete,
// then planned again) and a second NodeClaim is bought for it. kube-scheduler's nominations
// would keep the capacity, but DefaultPreemption, which runs after PostFilter, clears a pod's
// nomination when it finds no victims, and a nomination also counts the pod's own siblings
// against it in topology spread. So Filter keeps another pod off such a node unless it fits
// beside the waiting pods: their requests are added to the node's, and neither side's
// required anti-affinity may match the other (on one node every topology key the node
// carries is one domain). What else the other pod needs is the remaining Filters' call; a
// pod that fits nowhere is planned by the solver, which sees the promised pods as well.

// promisedTo returns the NodeClaim whose node is node (launchTracker.nodeClaimOf) and the
// pods, other than except, that wait for it; "" when no pod waits for node.
func (p *Plugin) promisedTo(node *corev1.Node, except types.UID) (string, []*corev1.Pod) {
	p.mu.Lock()
	nodeClaim := p.launches.nodeClaimOf(node)
	var refs []types.NamespacedName
	for _, uid := range p.waits.podsWaitingFor(nodeClaim) {
		if ref, ok := p.refs[uid]; ok && uid != except {
			refs = append(refs, ref)
		}
	}
	p.mu.Unlock()
	if nodeClaim == "" || len(refs) == 0 || p.pods == nil {
		return "", nil
	}
	pods := make([]*corev1.Pod, 0, len(refs))
	for _, ref := range refs {
		pod, err := p.pods.Pods(ref.Namespace).Get(ref.Name)
		if err != nil || pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
			continue // bound pods are the node's own; gone ones promise nothing
		}
		pods = append(pods, pod)
	}
	return nodeClaim, pods
}

// filterPromised rejects pod on nodeInfo when it does not fit beside the pods that wait for
// the node's NodeClaim (see above). It returns nil when it fits, or when nothing waits.
func (p *Plugin) filterPromised(pod *corev1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	node := nodeInfo.Node()
	if node == nil {
		return nil
	}
	nodeClaim, promised := p.promisedTo(node, pod.UID)
	if len(promised) == 0 {
		return nil
	}
	// Pods assumed or bound on the node are in nodeInfo already.
	onNode := sets.New[types.UID]()
	for _, info := range nodeInfo.GetPods() {
		onNode.Insert(info.GetPod().UID)
	}
	withPromised := nodeInfo.Snapshot()
	infos := make([]*framework.PodInfo, 0, len(promised))
	for _, other := range promised {
		if onNode.Has(other.UID) {
			continue
		}
		info, err := framework.NewPodInfo(other)
		if err != nil {
			return fwk.AsStatus(fmt.Errorf("reading pod %s/%s planned onto NodeClaim %s: %w", other.Namespace, other.Name, nodeClaim, err))
		}
		withPromised.AddPodInfo(info)
		infos = append(infos, info)
	}
	if len(infos) == 0 {
		return nil
	}
	if insufficient := noderesources.Fits(pod, withPromised, nil, noderesources.ResourceRequestsOptions{}); len(insufficient) > 0 {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, promisedMessage(nodeClaim, len(infos), "insufficient "+string(insufficient[0].ResourceName)))
	}
	podInfo, err := framework.NewPodInfo(pod)
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("reading pod %s/%s: %w", pod.Namespace, pod.Name, err))
	}
	for _, other := range infos {
		if antiAffine(podInfo, other.Pod, node) || antiAffine(other, pod, node) {
			return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, promisedMessage(nodeClaim, len(infos), "pod anti-affinity"))
		}
	}
	return nil
}

// antiAffine reports whether a required anti-affinity term of info matches pod, both on node.
// Namespace selectors are matched against no labels: only their namespaces list and an empty
// selector count (a rejection the real InterPodAffinity would also make, never one more).
func antiAffine(info fwk.PodInfo, pod *corev1.Pod, node *corev1.Node) bool {
	for _, term := range info.GetRequiredAntiAffinityTerms() {
		if _, ok := node.Labels[term.TopologyKey]; ok && term.Matches(pod, nil) {
			return true
		}
	}
	return false
}

func promisedMessage(nodeClaim string, pods int, why string) string {
	return fmt.Sprintf("node is promised to %d pod(s) waiting for NodeClaim %s (%s)", pods, nodeClaim, why)
}
