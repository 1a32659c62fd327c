package nodepool

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// ResourceNodes is the pseudo-resource counting a NodePool's nodes in status.resources, as
// Karpenter shows it and as spec.limits may cap it.
const ResourceNodes corev1.ResourceName = "nodes"

// nodeClaimsOf lists the NodePool's NodeClaims that are not being deleted: capacity on its way
// out no longer counts against the NodePool.
func nodeClaimsOf(ctx context.Context, c client.Client, nodePoolName string) ([]karpv1.NodeClaim, error) {
	list := &karpv1.NodeClaimList{}
	if err := c.List(ctx, list, client.MatchingLabels{karpv1.NodePoolLabelKey: nodePoolName}); err != nil {
		return nil, fmt.Errorf("listing nodeclaims of nodepool %s: %w", nodePoolName, err)
	}
	live := make([]karpv1.NodeClaim, 0, len(list.Items))
	for _, nc := range list.Items {
		if nc.DeletionTimestamp.IsZero() {
			live = append(live, nc)
		}
	}
	return live, nil
}

// sumCapacity adds up the capacity of nodeClaims and counts them under ResourceNodes.
func sumCapacity(nodeClaims []karpv1.NodeClaim) corev1.ResourceList {
	total := corev1.ResourceList{}
	for _, nc := range nodeClaims {
		for name, quantity := range nc.Status.Capacity {
			sum := total[name]
			sum.Add(quantity)
			total[name] = sum
		}
	}
	total[ResourceNodes] = *resource.NewQuantity(int64(len(nodeClaims)), resource.DecimalSI)
	return total
}
