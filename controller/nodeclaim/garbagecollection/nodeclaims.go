package garbagecollection

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
)

// reasonInstanceGone is the event reason on a NodeClaim deleted because its instance is gone.
const reasonInstanceGone = "InstanceTerminated"

// collectOrphanedNodeClaims deletes launched NodeClaims, past the grace period and not being
// deleted, whose instance the cloud provider no longer has. Their termination finalizer does the
// rest.
func (c *Controller) collectOrphanedNodeClaims(ctx context.Context) error {
	var list karpv1.NodeClaimList
	if err := c.client.List(ctx, &list); err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	var errs []error
	for i := range list.Items {
		nc := &list.Items[i]
		if !c.mayHaveLostInstance(nc) {
			continue
		}
		if err := c.deleteIfInstanceGone(ctx, nc); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (c *Controller) mayHaveLostInstance(nc *karpv1.NodeClaim) bool {
	return nc.Status.ProviderID != "" &&
		nc.DeletionTimestamp == nil &&
		meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeLaunched) &&
		c.oldEnough(nc.CreationTimestamp.Time)
}

func (c *Controller) deleteIfInstanceGone(ctx context.Context, nc *karpv1.NodeClaim) error {
	_, err := c.cloudProvider.Get(ctx, nc.Status.ProviderID)
	if err == nil {
		return nil
	}
	if !cloudprovider.IsNodeClaimNotFoundError(err) {
		return fmt.Errorf("getting instance %s of nodeclaim %s: %w", nc.Status.ProviderID, nc.Name, err)
	}
	// The UID precondition keeps a NodeClaim recreated under the same name from being deleted.
	if err := c.client.Delete(ctx, nc, client.Preconditions{UID: &nc.UID}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("deleting nodeclaim %s whose instance is gone: %w", nc.Name, err)
	}
	log.FromContext(ctx).Info("deleted nodeclaim: its instance is gone", "NodeClaim", map[string]string{"name": nc.Name}, "provider-id", nc.Status.ProviderID)
	c.recorder.Eventf(nc, nil, corev1.EventTypeWarning, reasonInstanceGone, "GarbageCollect",
		"Instance %s no longer exists; deleting the NodeClaim", nc.Status.ProviderID)
	return nil
}
