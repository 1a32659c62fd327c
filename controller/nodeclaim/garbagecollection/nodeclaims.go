package garbagecollection

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// reasonInstanceGone is the event reason on a NodeClaim deleted because its instance is gone.
const reasonInstanceGone = "InstanceTerminated"

// missesToCollect is how many sweeps in a row must miss a NodeClaim's instance before the
// NodeClaim is deleted: a cloud's listing is eventually consistent, and one listing that does
// not show a fresh instance yet must not kill it.
const missesToCollect = 2

// collectOrphanedNodeClaims deletes launched NodeClaims, not being deleted and launched more
// than the grace period ago, whose instance two sweeps in a row did not list. instances are
// the provider IDs of this sweep's one listing, taken before claims were read. Their
// termination finalizer does the rest.
func (c *Controller) collectOrphanedNodeClaims(ctx context.Context, instances sets.Set[string], claims []karpv1.NodeClaim) error {
	seen := sets.New[types.UID]()
	var errs []error
	for i := range claims {
		nc := &claims[i]
		seen.Insert(nc.UID)
		if !c.mayHaveLostInstance(nc) || instances.Has(nc.Status.ProviderID) {
			delete(c.misses, nc.UID)
			continue
		}
		c.misses[nc.UID]++
		if c.misses[nc.UID] < missesToCollect {
			log.FromContext(ctx).V(1).Info("instance of nodeclaim not listed; collecting it if the next sweep misses it too",
				"NodeClaim", map[string]string{"name": nc.Name}, "provider-id", nc.Status.ProviderID)
			continue
		}
		if err := c.deleteInstanceGone(ctx, nc); err != nil {
			errs = append(errs, err)
			continue
		}
		delete(c.misses, nc.UID)
	}
	// Forget NodeClaims that are gone.
	for uid := range c.misses {
		if !seen.Has(uid) {
			delete(c.misses, uid)
		}
	}
	return errors.Join(errs...)
}

// mayHaveLostInstance reports whether nc is launched, not being deleted, and launched more
// than the grace period ago: counted from the Launched transition, not from creation, since
// a NodeClaim may wait long before its launch and a fresh instance may not be listed yet.
func (c *Controller) mayHaveLostInstance(nc *karpv1.NodeClaim) bool {
	if nc.Status.ProviderID == "" || nc.DeletionTimestamp != nil {
		return false
	}
	launched := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeLaunched)
	return launched != nil && launched.Status == metav1.ConditionTrue && c.oldEnough(launched.LastTransitionTime.Time)
}

// deleteInstanceGone deletes nc, whose instance is gone.
func (c *Controller) deleteInstanceGone(ctx context.Context, nc *karpv1.NodeClaim) error {
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
