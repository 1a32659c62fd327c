package solver

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/simulation/buffer"
)

// ephemeralTaints are put on a node while it registers and initializes and removed once it is
// ready; kube-scheduler rejects the node until then, but the capacity is already bought.
var ephemeralTaints = map[string]bool{
	karpv1.UnregisteredTaintKey:                      true,
	corev1.TaintNodeNotReady:                         true,
	corev1.TaintNodeUnreachable:                      true,
	"node.cloudprovider.kubernetes.io/uninitialized": true,
}

// initializingNodes returns nodes with the ephemeral and startup taints removed from every node
// whose NodeClaim is not Initialized yet, and which NodeClaim each such node belongs to. The
// solver sees such a node as the capacity it is about to be: otherwise a pod that the real
// scheduler placed elsewhere than planned would get new capacity while its planned node, still
// tainted for a second, stood empty.
//
// A Node is the claim's when the claim's status names it, or, before the lifecycle controller
// has written that, when it carries the claim's provider ID or the claim's own name (addInFlight
// counts such a claim as landed, so this is the only place its capacity is offered): a batch
// planned in that window would otherwise buy new capacity while the claim's node stood empty.
func initializingNodes(nodes []*corev1.Node, nodeClaims []*karpv1.NodeClaim) ([]*corev1.Node, map[string]string) {
	byNode, byProviderID, byName := map[string]*karpv1.NodeClaim{}, map[string]*karpv1.NodeClaim{}, map[string]*karpv1.NodeClaim{}
	for _, nc := range nodeClaims {
		if nc.DeletionTimestamp != nil || meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized) {
			continue
		}
		if nc.Status.NodeName != "" {
			byNode[nc.Status.NodeName] = nc
			continue
		}
		if nc.Status.ProviderID != "" {
			byProviderID[nc.Status.ProviderID] = nc
		}
		byName[nc.Name] = nc
	}
	if len(byNode) == 0 && len(byProviderID) == 0 && len(byName) == 0 {
		return nodes, nil
	}
	owners := map[string]string{}
	out := make([]*corev1.Node, len(nodes))
	for i, node := range nodes {
		out[i] = node
		nc, ok := byNode[node.Name]
		if !ok && node.Spec.ProviderID != "" {
			nc, ok = byProviderID[node.Spec.ProviderID]
		}
		if !ok {
			nc, ok = byName[node.Name]
		}
		if !ok || node.DeletionTimestamp != nil {
			continue
		}
		owners[node.Name] = nc.Name
		startup := map[string]bool{}
		for _, t := range nc.Spec.StartupTaints {
			startup[t.Key] = true
		}
		stripped := node.DeepCopy()
		stripped.Spec.Taints = stripped.Spec.Taints[:0]
		for _, t := range node.Spec.Taints {
			if !ephemeralTaints[t.Key] && !startup[t.Key] {
				stripped.Spec.Taints = append(stripped.Spec.Taints, t)
			}
		}
		out[i] = stripped
	}
	return out, owners
}

// tryInitializing places pod on a node that is still initializing when the Filters allow it, and
// records the node's NodeClaim in the plan so the pod waits for it instead of getting capacity
// of its own.
func (r *run) tryInitializing(ctx context.Context, pod *corev1.Pod) (bool, error) {
	if len(r.initializing) == 0 {
		return false, nil
	}
	name, status := r.engine.FitsAny(ctx, pod, r.initializingNames)
	if !status.IsSuccess() {
		return false, nil
	}
	if s := r.engine.ScheduleChecked(ctx, pod, name); !s.IsSuccess() {
		return false, s.AsError()
	}
	if node, err := r.engine.Snapshot().Get(name); err == nil {
		r.notePodAdded(nodeDomain(node.Node().Labels))
	}
	if r.retryPending && r.registered.Has(name) && !buffer.IsVirtual(pod) {
		r.plan.Retry[pod.UID] = name
		return true, nil
	}
	r.plan.InFlight[pod.UID] = r.initializing[name]
	return true, nil
}

// retryOnRegisteredNodes lets the batch's pending pods take registered, initialized nodes
// too (Plan.Retry). kube-scheduler tried each pod on them before PostFilter, but a node may
// have finished initializing, or freed room, between that attempt and the batch: without
// this, the batch would buy new capacity while such a node stood empty.
func (r *run) retryOnRegisteredNodes(ctx context.Context) error {
	r.retryPending = true
	return r.useRegisteredNodes(ctx)
}
