package plugin

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/simulation"
)

// nodeClaimResource is the NodeClaim kind as kube-scheduler names a custom resource in
// EventsToRegister (<plural>.<version>.<group>); it watches it with a dynamic informer.
const nodeClaimResource fwk.EventResource = "nodeclaims.v1." + karpv1.Group

// EventsToRegister implements fwk.EnqueueExtensions: a joinery node that appears or becomes
// schedulable, and a change to a NodeClaim a pod was planned onto, may let the pod schedule.
//
// kube-scheduler consults a plugin's hints only for pods that plugin rejected. This plugin's
// PreFilter and Filter reject a pod that waits for a NodeClaim (pin.go); these hints requeue
// it when its NodeClaim changes or a joinery node becomes schedulable. For pods the other
// Filters rejected, their own hints decide, and the plugin additionally activates the pods of
// a NodeClaim that finished launching or went away (see nodeClaimHandler).
func (p *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{
			Event:          fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel | fwk.UpdateNodeTaint},
			QueueingHintFn: p.isNodeNowSchedulableFor,
		},
		{
			Event:          fwk.ClusterEvent{Resource: nodeClaimResource, ActionType: fwk.All},
			QueueingHintFn: isNodeClaimPlannedFor,
		},
	}, nil
}

// isJoineryNodeNowSchedulable queues the pod when a node of a NodePool (labelled
// karpenter.sh/nodepool) becomes able to take pods: added schedulable, or its cordon or
// karpenter.sh/unregistered taint lifted.
func isJoineryNodeNowSchedulable(logger klog.Logger, pod *corev1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	node, ok := newObj.(*corev1.Node)
	if !ok {
		return fwk.Queue, fmt.Errorf("expected a Node, got %T", newObj)
	}
	if !joineryNodeSchedulable(node) {
		return fwk.QueueSkip, nil
	}
	if old, ok := oldObj.(*corev1.Node); ok && joineryNodeSchedulable(old) {
		return fwk.QueueSkip, nil
	}
	logger.V(5).Info("joinery node became schedulable", "pod", klog.KObj(pod), "node", klog.KObj(node))
	return fwk.Queue, nil
}

func joineryNodeSchedulable(node *corev1.Node) bool {
	if _, ok := node.Labels[karpv1.NodePoolLabelKey]; !ok || node.Spec.Unschedulable {
		return false
	}
	return !slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == karpv1.UnregisteredTaintKey })
}

// isNodeNowSchedulableFor is isJoineryNodeNowSchedulable, narrowed for a pod that waits for a
// NodeClaim: PreFilter holds it to that NodeClaim's node, so another node arriving cannot
// schedule it, and requeueing every waiting pod whenever one of many new nodes arrives made
// most of a scale-up's scheduling attempts. Its own node is caught here, or, when the plugin
// does not know the node yet, by the NodeClaim's own update (isNodeClaimPlannedFor).
func (p *Plugin) isNodeNowSchedulableFor(logger klog.Logger, pod *corev1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	hint, err := isJoineryNodeNowSchedulable(logger, pod, oldObj, newObj)
	if err != nil || hint == fwk.QueueSkip {
		return hint, err
	}
	node, _ := newObj.(*corev1.Node)
	p.mu.Lock()
	nodeClaim, waiting := p.waits.nodeClaimFor(pod.UID)
	own := p.launches.nodeOf(nodeClaim)
	p.mu.Unlock()
	if waiting && own != node.Name {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}

// isNodeClaimPlannedFor queues the pod when a NodeClaim planned for it (per its planned-pods
// annotation) changes in a way that can change the pin's decision: it is added or goes away,
// starts deleting, plans or unplans the pod, gets its node, or initializes. Other status
// updates (conditions, capacity, the provider ID) leave the pod where it was: requeueing a
// NodeClaim's pods on each of them cost a scheduling attempt per pod per update.
func isNodeClaimPlannedFor(logger klog.Logger, pod *corev1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	if oldObj == nil && newObj == nil {
		return fwk.Queue, fmt.Errorf("expected a NodeClaim, got neither an old nor a new object")
	}
	// The annotation first, without converting the object: most events concern other pods.
	wasPlanned, err := plannedIn(oldObj, pod.UID)
	if err != nil {
		return fwk.Queue, err
	}
	isPlanned, err := plannedIn(newObj, pod.UID)
	if err != nil {
		return fwk.Queue, err
	}
	if !wasPlanned && !isPlanned {
		return fwk.QueueSkip, nil
	}
	if oldObj == nil || newObj == nil || wasPlanned != isPlanned {
		logger.V(5).Info("nodeclaim planned for the pod added, deleted or replanned", "pod", klog.KObj(pod))
		return fwk.Queue, nil
	}
	oldNC, err := toNodeClaim(oldObj)
	if err != nil {
		return fwk.Queue, err
	}
	newNC, err := toNodeClaim(newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if !pinChanged(oldNC, newNC) {
		return fwk.QueueSkip, nil
	}
	logger.V(5).Info("nodeclaim planned for the pod changed", "pod", klog.KObj(pod), "NodeClaim", klog.KObj(newNC))
	return fwk.Queue, nil
}

// plannedIn reports whether obj, a NodeClaim in any shape toNodeClaim accepts (or nil), lists
// uid in its planned-pods annotation.
func plannedIn(obj any, uid types.UID) (bool, error) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	var annotations map[string]string
	switch o := obj.(type) {
	case nil:
		return false, nil
	case *karpv1.NodeClaim:
		annotations = o.Annotations
	case *unstructured.Unstructured:
		annotations = o.GetAnnotations()
	default:
		return false, fmt.Errorf("expected a NodeClaim, got %T", obj)
	}
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Annotations: annotations}}
	return slices.Contains(simulation.PlannedPods(nc), uid), nil
}

// pinChanged reports whether a NodeClaim update changes what PreFilter and Filter decide for
// the pods planned onto it: its node, whether it is deleting, whether it is initialized.
func pinChanged(old, new *karpv1.NodeClaim) bool {
	return old.Status.NodeName != new.Status.NodeName ||
		(old.DeletionTimestamp == nil) != (new.DeletionTimestamp == nil) ||
		launching(old) != launching(new)
}

// toNodeClaim accepts the shapes a NodeClaim event carries: the dynamic informer's
// unstructured object, a typed one, or a deletion tombstone.
func toNodeClaim(obj any) (*karpv1.NodeClaim, error) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	switch o := obj.(type) {
	case *karpv1.NodeClaim:
		return o, nil
	case *unstructured.Unstructured:
		nc := &karpv1.NodeClaim{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, nc); err != nil {
			return nil, fmt.Errorf("converting NodeClaim %s: %w", o.GetName(), err)
		}
		return nc, nil
	default:
		return nil, fmt.Errorf("expected a NodeClaim, got %T", obj)
	}
}
