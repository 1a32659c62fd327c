package kwok

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/scheduling"
)

const (
	// ProviderIDPrefix starts the provider ID of every kwok node: kwok://<node name>.
	ProviderIDPrefix = "kwok://"
	// KwokNodeAnnotation with KwokNodeAnnotationValue tells kwok to simulate a Node's kubelet.
	KwokNodeAnnotation      = "kwok.x-k8s.io/node"
	KwokNodeAnnotationValue = "fake"
)

// Delete deletes nodeClaim's Node. It returns a NodeClaimNotFoundError when the Node is gone.
func (p *CloudProvider) Delete(ctx context.Context, nodeClaim *karpv1.NodeClaim) error {
	name, err := nodeName(nodeClaim.Status.ProviderID)
	if err != nil {
		return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("nodeclaim %s: %w", nodeClaim.Name, err))
	}
	node := &corev1.Node{}
	node.Name = name
	if err := p.client.Delete(ctx, node); err != nil {
		if apierrors.IsNotFound(err) {
			return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("node %s of nodeclaim %s is gone", name, nodeClaim.Name))
		}
		return fmt.Errorf("deleting node %s of nodeclaim %s: %w", name, nodeClaim.Name, err)
	}
	return nil
}

// Get describes the kwok node with providerID.
func (p *CloudProvider) Get(ctx context.Context, providerID string) (*karpv1.NodeClaim, error) {
	name, err := nodeName(providerID)
	if err != nil {
		return nil, cloudprovider.NewNodeClaimNotFoundError(err)
	}
	var node corev1.Node
	if err := p.client.Get(ctx, client.ObjectKey{Name: name}, &node); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("node %s not found", name))
		}
		return nil, fmt.Errorf("getting node %s: %w", name, err)
	}
	if !isManaged(&node) || node.Spec.ProviderID != providerID {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("node %s is not the kwok node %s", name, providerID))
	}
	return nodeClaimFromNode(&node), nil
}

// List describes every kwok node this provider launched.
func (p *CloudProvider) List(ctx context.Context) ([]*karpv1.NodeClaim, error) {
	nodes, err := p.managedNodes(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*karpv1.NodeClaim, 0, len(nodes))
	for i := range nodes {
		out = append(out, nodeClaimFromNode(&nodes[i]))
	}
	return out, nil
}

func (p *CloudProvider) managedNodes(ctx context.Context) ([]corev1.Node, error) {
	var list corev1.NodeList
	if err := p.client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	var out []corev1.Node
	for _, n := range list.Items {
		if isManaged(&n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// isManaged reports whether node is one this provider launched: a kwok node with a kwok provider
// ID.
func isManaged(node *corev1.Node) bool {
	return node.Annotations[KwokNodeAnnotation] == KwokNodeAnnotationValue && strings.HasPrefix(node.Spec.ProviderID, ProviderIDPrefix)
}

func nodeName(providerID string) (string, error) {
	name, ok := strings.CutPrefix(providerID, ProviderIDPrefix)
	if !ok || name == "" {
		return "", fmt.Errorf("provider ID %q is not of the form %s<node name>", providerID, ProviderIDPrefix)
	}
	return name, nil
}

// imageID is the image a kwok node "runs", derived from its OS and architecture.
func imageID(node *corev1.Node) string {
	return "kwok-" + node.Labels[corev1.LabelOSStable] + "-" + node.Labels[corev1.LabelArchStable]
}

// nodeLabels are node's labels less the hostname and the label aliases, which belong to the Node,
// not the NodeClaim.
func nodeLabels(node *corev1.Node) map[string]string {
	labels := make(map[string]string, len(node.Labels))
	for k, v := range node.Labels {
		if k != corev1.LabelHostname && !scheduling.IsLabelAlias(k) {
			labels[k] = v
		}
	}
	return labels
}

// resolved is nodeClaim as launched on node: the node's labels added and status filled.
func resolved(nodeClaim *karpv1.NodeClaim, node *corev1.Node) *karpv1.NodeClaim {
	out := nodeClaim.DeepCopy()
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	for k, v := range nodeLabels(node) {
		out.Labels[k] = v
	}
	out.Status.ProviderID = node.Spec.ProviderID
	out.Status.ImageID = imageID(node)
	out.Status.Capacity = node.Status.Capacity.DeepCopy()
	out.Status.Allocatable = node.Status.Allocatable.DeepCopy()
	return out
}

// nodeClaimFromNode describes a kwok node as the provider sees it, for Get and List: the name
// (NodeClaims and their Nodes share names), labels, provider ID and resources, and the deletion
// timestamp while the node is being deleted.
func nodeClaimFromNode(node *corev1.Node) *karpv1.NodeClaim {
	nc := &karpv1.NodeClaim{}
	nc.Name = node.Name
	nc.Labels = nodeLabels(node)
	nc.CreationTimestamp = node.CreationTimestamp
	nc.DeletionTimestamp = node.DeletionTimestamp.DeepCopy()
	nc.Status.NodeName = node.Name
	nc.Status.ProviderID = node.Spec.ProviderID
	nc.Status.ImageID = imageID(node)
	nc.Status.Capacity = node.Status.Capacity.DeepCopy()
	nc.Status.Allocatable = node.Status.Allocatable.DeepCopy()
	return nc
}
