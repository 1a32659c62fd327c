package garbagecollection

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/controller/state"
)

// reasonLeakedInstance is the event reason on the Node of a terminated leaked instance.
const reasonLeakedInstance = "GarbageCollected"

// collectLeakedInstances terminates instances labelled with a NodePool, past the grace period,
// whose provider ID no NodeClaim has (claimed). Instances without the NodePool label were not
// launched by joinery and are never touched. It returns the provider IDs it terminated.
func (c *Controller) collectLeakedInstances(ctx context.Context, instances []*karpv1.NodeClaim, claimed sets.Set[string]) (sets.Set[string], error) {
	terminated := sets.New[string]()
	var errs []error
	for _, instance := range instances {
		if !c.isLeaked(instance, claimed) {
			continue
		}
		if err := c.terminate(ctx, instance); err != nil {
			errs = append(errs, err)
			continue
		}
		terminated.Insert(instance.Status.ProviderID)
	}
	return terminated, errors.Join(errs...)
}

func (c *Controller) isLeaked(instance *karpv1.NodeClaim, claimed sets.Set[string]) bool {
	_, launchedByJoinery := instance.Labels[karpv1.NodePoolLabelKey]
	return launchedByJoinery &&
		instance.Status.ProviderID != "" &&
		!claimed.Has(instance.Status.ProviderID) &&
		instance.DeletionTimestamp == nil &&
		c.oldEnough(instance.CreationTimestamp.Time)
}

// terminate deletes a leaked instance; an instance already gone counts as done.
func (c *Controller) terminate(ctx context.Context, instance *karpv1.NodeClaim) error {
	providerID := instance.Status.ProviderID
	logger := log.FromContext(ctx).WithValues("provider-id", providerID, "nodepool", instance.Labels[karpv1.NodePoolLabelKey])
	// The Nodes are found first: terminating the instance may take its Node with it.
	nodes, err := state.NodesForProviderID(ctx, c.client, providerID)
	if err != nil {
		return fmt.Errorf("finding nodes of leaked instance %s: %w", providerID, err)
	}
	if err := c.cloudProvider.Delete(ctx, instance); err != nil {
		if cloudprovider.IsNodeClaimNotFoundError(err) {
			return nil
		}
		return fmt.Errorf("terminating leaked instance %s: %w", providerID, err)
	}
	logger.Info("terminated instance: no nodeclaim has its provider ID", "age", c.clock.Since(instance.CreationTimestamp.Time).String())
	// A leaked instance has no NodeClaim to carry the event; its Nodes, if it registered any, do.
	for i := range nodes {
		c.recorder.Eventf(&nodes[i], nil, corev1.EventTypeWarning, reasonLeakedInstance, "GarbageCollect",
			"Terminated instance %s: no NodeClaim has its provider ID", providerID)
	}
	return nil
}
