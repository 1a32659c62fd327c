package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/controller/state"
)

// lastAppliedAnnotation is kubectl's record of an applied manifest; it describes the NodeClaim,
// not the Node, so it is not synced.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// register links the Node with the NodeClaim's provider ID, or deletes the NodeClaim once no
// Node has registered within the registration TTL after launch. It returns the linked Node.
func (c *Controller) register(ctx context.Context, nc *karpv1.NodeClaim, conds conditionSetter) (*corev1.Node, stepResult, error) {
	nodes, err := state.NodesForProviderID(ctx, c.client, nc.Status.ProviderID)
	if err != nil {
		return nil, stepResult{stop: true}, err
	}
	switch len(nodes) {
	case 0:
		if isTrue(nc, karpv1.ConditionTypeRegistered) {
			// The Node went away after registering; its termination deletes this NodeClaim.
			return nil, stepResult{stop: true}, nil
		}
		conds.set(karpv1.ConditionTypeRegistered, metav1.ConditionUnknown, reasonNodeNotFound, "Node not registered with cluster")
		result, err := c.awaitRegistration(ctx, nc, "no node with its provider ID registered")
		return nil, result, err
	case 1:
	default:
		message := fmt.Sprintf("%d nodes have provider ID %s", len(nodes), nc.Status.ProviderID)
		conds.set(karpv1.ConditionTypeRegistered, metav1.ConditionFalse, reasonMultipleNodes, message)
		result, err := c.awaitRegistration(ctx, nc, message)
		return nil, result, err
	}
	node := &nodes[0]
	if isTrue(nc, karpv1.ConditionTypeRegistered) && nc.Status.NodeName == node.Name {
		return node, stepResult{}, nil
	}
	if err := c.syncNode(ctx, nc, node); err != nil {
		result, err := c.registrationFailed(ctx, nc, conds, err)
		return nil, result, err
	}
	nc.Status.NodeName = node.Name
	conds.set(karpv1.ConditionTypeRegistered, metav1.ConditionTrue, karpv1.ConditionTypeRegistered, "")
	log.FromContext(ctx).Info("registered nodeclaim", "provider-id", nc.Status.ProviderID, "Node", map[string]string{"name": node.Name})
	return node, stepResult{}, nil
}

// registrationRetryInterval is how soon a registration the API server refused is tried again.
const registrationRetryInterval = 5 * time.Second

// registrationFailed handles a node that could not be made the NodeClaim's. Once the TTL is
// over the NodeClaim goes like one whose node never appeared. Before that, a conflict is
// retried at once, and any other refusal (an admission policy, say) no later than the
// registration deadline, which exponential backoff could overshoot by many minutes.
func (c *Controller) registrationFailed(ctx context.Context, nc *karpv1.NodeClaim, conds conditionSetter, err error) (stepResult, error) {
	if c.registrationExpired(nc) {
		return c.awaitRegistration(ctx, nc, err.Error())
	}
	if apierrors.IsConflict(err) {
		return stepResult{stop: true}, err
	}
	conds.set(karpv1.ConditionTypeRegistered, metav1.ConditionUnknown, reasonNotRegistered, err.Error())
	log.FromContext(ctx).Error(err, "registering node", "provider-id", nc.Status.ProviderID)
	remaining := c.registrationDeadline(nc).Sub(c.clock.Now())
	return stepResult{stop: true, requeueAfter: min(remaining, registrationRetryInterval)}, nil
}

// registrationDeadline is when the registration TTL (Karpenter's liveness TTL), counted from
// the NodeClaim's creation, runs out: a NodeClaim that never launches (bad user data, denied
// permissions, a deleted node class) runs out of it as much as one whose node never comes.
// An object that never went through an API server has no creation time: its launch counts.
func (c *Controller) registrationDeadline(nc *karpv1.NodeClaim) time.Time {
	start := nc.CreationTimestamp.Time
	if start.IsZero() {
		if launched := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeLaunched); launched != nil {
			start = launched.LastTransitionTime.Time
		} else {
			start = c.clock.Now()
		}
	}
	return start.Add(c.registrationTTL)
}

func (c *Controller) registrationExpired(nc *karpv1.NodeClaim) bool {
	return !c.clock.Now().Before(c.registrationDeadline(nc))
}

// awaitRegistration waits for the Node until the registration TTL has passed, and then deletes
// the NodeClaim; why says what registration is still waiting for.
func (c *Controller) awaitRegistration(ctx context.Context, nc *karpv1.NodeClaim, why string) (stepResult, error) {
	if remaining := c.registrationDeadline(nc).Sub(c.clock.Now()); remaining > 0 {
		return stepResult{stop: true, requeueAfter: remaining}, nil
	}
	log.FromContext(ctx).Info("deleting nodeclaim: node did not register", "provider-id", nc.Status.ProviderID, "ttl", c.registrationTTL.String(), "reason", why)
	c.recorder.Eventf(nc, nil, corev1.EventTypeWarning, reasonRegistrationTimeout, "Register",
		"Node with provider ID %s did not register within %s of the NodeClaim's creation (%s); deleting the NodeClaim", nc.Status.ProviderID, c.registrationTTL, why)
	timedOutTotal.WithLabelValues(phaseRegistration, nc.Labels[karpv1.NodePoolLabelKey]).Inc()
	return stepResult{deleted: true}, c.deleteNodeClaim(ctx, nc)
}

// syncNode makes node the NodeClaim's: owner reference and termination finalizer, the
// NodeClaim's labels, annotations, taints and startup taints, the registered label, and no
// unregistered taint. Taints are added only the first time (before the registered label is
// there), because startup taints are removed by others afterwards and must stay removed.
func (c *Controller) syncNode(ctx context.Context, nc *karpv1.NodeClaim, node *corev1.Node) error {
	stored := node.DeepCopy()
	firstTime := node.Labels[karpv1.NodeRegisteredLabelKey] != "true"
	if firstTime {
		node.Spec.Taints = withTaints(node.Spec.Taints, nc.Spec.Taints, nc.Spec.StartupTaints)
	}
	node.Labels = withEntries(node.Labels, nc.Labels, "")
	node.Labels[karpv1.NodeRegisteredLabelKey] = "true"
	node.Annotations = withEntries(node.Annotations, nc.Annotations, lastAppliedAnnotation)
	node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == karpv1.UnregisteredTaintKey })
	controllerutil.AddFinalizer(node, karpv1.TerminationFinalizer)
	node.OwnerReferences = withOwner(node.OwnerReferences, nc)
	if err := c.client.Patch(ctx, node, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("syncing node %s: %w", node.Name, err)
	}
	if firstTime {
		nodesCreatedTotal.WithLabelValues(nc.Labels[karpv1.NodePoolLabelKey], node.Labels[corev1.LabelTopologyZone]).Inc()
	}
	return nil
}

// withEntries copies src's entries except skip into dst, which it allocates if nil.
func withEntries(dst, src map[string]string, skip string) map[string]string {
	if dst == nil {
		dst = map[string]string{}
	}
	for k, v := range src {
		if k != skip {
			dst[k] = v
		}
	}
	return dst
}

// withTaints appends to taints each of the sets' taints it lacks (same key and effect).
func withTaints(taints []corev1.Taint, sets ...[]corev1.Taint) []corev1.Taint {
	for _, set := range sets {
		for _, t := range set {
			if !slices.ContainsFunc(taints, func(have corev1.Taint) bool { return have.MatchTaint(&t) }) {
				taints = append(taints, t)
			}
		}
	}
	return taints
}

// withOwner adds an owner reference to nc unless one exists, so that deleting the NodeClaim
// (with the API server's garbage collection) also deletes the Node.
func withOwner(refs []metav1.OwnerReference, nc *karpv1.NodeClaim) []metav1.OwnerReference {
	if slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool { return r.UID == nc.UID }) {
		return refs
	}
	return append(refs, metav1.OwnerReference{
		APIVersion:         karpv1.SchemeGroupVersion.String(),
		Kind:               "NodeClaim",
		Name:               nc.Name,
		UID:                nc.UID,
		BlockOwnerDeletion: new(true),
	})
}
