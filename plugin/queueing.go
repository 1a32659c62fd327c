package plugin

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
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
			QueueingHintFn: isJoineryNodeNowSchedulable,
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

// isNodeClaimPlannedFor queues the pod when the NodeClaim that changed (or went away) was
// planned for it, per its planned-pods annotation.
func isNodeClaimPlannedFor(logger klog.Logger, pod *corev1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	obj := newObj
	if obj == nil {
		obj = oldObj
	}
	nc, err := toNodeClaim(obj)
	if err != nil {
		return fwk.Queue, err
	}
	if !slices.Contains(simulation.PlannedPods(nc), pod.UID) {
		return fwk.QueueSkip, nil
	}
	logger.V(5).Info("nodeclaim planned for the pod changed", "pod", klog.KObj(pod), "NodeClaim", klog.KObj(nc))
	return fwk.Queue, nil
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
