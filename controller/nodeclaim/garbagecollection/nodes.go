package garbagecollection

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// reasonOrphanedNode is the event reason on a Node deleted because no NodeClaim claims it.
const reasonOrphanedNode = "GarbageCollected"

// collectOrphanedNodes deletes Nodes joinery launched — labelled with a NodePool or carrying
// the termination finalizer — that are past the grace period, not being deleted, and whose
// provider ID no NodeClaim has. The Node's termination finalizer, finding no NodeClaim, then
// terminates the instance and releases the Node. nodes were listed before the NodeClaims whose
// provider IDs are claimed; skip lists provider IDs already collected as leaked instances in
// this pass.
func (c *Controller) collectOrphanedNodes(ctx context.Context, nodes []corev1.Node, claimed, skip sets.Set[string]) error {
	var errs []error
	for i := range nodes {
		node := &nodes[i]
		if !c.isOrphaned(node, claimed) || skip.Has(node.Spec.ProviderID) {
			continue
		}
		if err := c.deleteNode(ctx, node); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (c *Controller) isOrphaned(node *corev1.Node, claimed sets.Set[string]) bool {
	_, labelled := node.Labels[karpv1.NodePoolLabelKey]
	joinerys := labelled || controllerutil.ContainsFinalizer(node, karpv1.TerminationFinalizer)
	return joinerys &&
		node.Spec.ProviderID != "" &&
		!claimed.Has(node.Spec.ProviderID) &&
		node.DeletionTimestamp == nil &&
		c.oldEnough(node.CreationTimestamp.Time)
}

func (c *Controller) deleteNode(ctx context.Context, node *corev1.Node) error {
	// The UID precondition keeps a Node recreated under the same name from being deleted.
	if err := c.client.Delete(ctx, node, client.Preconditions{UID: &node.UID}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("deleting node %s that no nodeclaim claims: %w", node.Name, err)
	}
	log.FromContext(ctx).Info("deleted node: no nodeclaim has its provider ID", "Node", map[string]string{"name": node.Name}, "provider-id", node.Spec.ProviderID)
	c.recorder.Eventf(node, nil, corev1.EventTypeWarning, reasonOrphanedNode, "GarbageCollect",
		"Deleted node: no NodeClaim has its provider ID %s", node.Spec.ProviderID)
	return nil
}
