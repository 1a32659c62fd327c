package state

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// Field indexes on the manager's cache, registered by IndexProviderIDs.
const (
	// NodeProviderIDField indexes Nodes by spec.providerID.
	NodeProviderIDField = "spec.providerID"
	// NodeClaimProviderIDField indexes NodeClaims by status.providerID.
	NodeClaimProviderIDField = "status.providerID"
)

// IndexProviderIDs registers the provider-ID indexes of Nodes and NodeClaims. Call it once per
// manager: every controller that links the two relies on it.
func IndexProviderIDs(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &corev1.Node{}, NodeProviderIDField, NodeProviderID); err != nil {
		return fmt.Errorf("indexing nodes by provider ID: %w", err)
	}
	if err := indexer.IndexField(ctx, &karpv1.NodeClaim{}, NodeClaimProviderIDField, NodeClaimProviderID); err != nil {
		return fmt.Errorf("indexing nodeclaims by provider ID: %w", err)
	}
	return nil
}

// NodeProviderID is the index function of NodeProviderIDField.
func NodeProviderID(obj client.Object) []string {
	if node, ok := obj.(*corev1.Node); ok && node.Spec.ProviderID != "" {
		return []string{node.Spec.ProviderID}
	}
	return nil
}

// NodeClaimProviderID is the index function of NodeClaimProviderIDField.
func NodeClaimProviderID(obj client.Object) []string {
	if nc, ok := obj.(*karpv1.NodeClaim); ok && nc.Status.ProviderID != "" {
		return []string{nc.Status.ProviderID}
	}
	return nil
}

// NodesForProviderID lists the Nodes with providerID; none for an empty ID.
func NodesForProviderID(ctx context.Context, c client.Reader, providerID string) ([]corev1.Node, error) {
	if providerID == "" {
		return nil, nil
	}
	var list corev1.NodeList
	if err := c.List(ctx, &list, client.MatchingFields{NodeProviderIDField: providerID}); err != nil {
		return nil, fmt.Errorf("listing nodes with provider ID %s: %w", providerID, err)
	}
	return list.Items, nil
}

// NodeClaimsForProviderID lists the NodeClaims with providerID; none for an empty ID.
func NodeClaimsForProviderID(ctx context.Context, c client.Reader, providerID string) ([]karpv1.NodeClaim, error) {
	if providerID == "" {
		return nil, nil
	}
	var list karpv1.NodeClaimList
	if err := c.List(ctx, &list, client.MatchingFields{NodeClaimProviderIDField: providerID}); err != nil {
		return nil, fmt.Errorf("listing nodeclaims with provider ID %s: %w", providerID, err)
	}
	return list.Items, nil
}

// NodeClaimsOfNode maps a Node to reconcile requests for the NodeClaims with its provider ID,
// for controllers of NodeClaims that watch Nodes.
func NodeClaimsOfNode(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		node, ok := obj.(*corev1.Node)
		if !ok {
			return nil
		}
		claims, err := NodeClaimsForProviderID(ctx, c, node.Spec.ProviderID)
		if err != nil {
			log.FromContext(ctx).Error(err, "mapping node to nodeclaims", "node", node.Name)
			return nil
		}
		out := make([]reconcile.Request, 0, len(claims))
		for i := range claims {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&claims[i])})
		}
		return out
	}
}
