package scheduling

import (
	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// NodeIndex links NodeClaims to their Nodes, the one way every binary does: by the
// NodeClaim's status.nodeName when that Node exists, else by its status.providerID (a Node
// that registered before the NodeClaim's status caught up).
type NodeIndex struct {
	byName, byProviderID map[string]*corev1.Node
}

// IndexNodes indexes nodes by name and provider ID.
func IndexNodes(nodes []*corev1.Node) NodeIndex {
	ix := NodeIndex{byName: make(map[string]*corev1.Node, len(nodes)), byProviderID: make(map[string]*corev1.Node, len(nodes))}
	for _, n := range nodes {
		ix.byName[n.Name] = n
		if n.Spec.ProviderID != "" {
			ix.byProviderID[n.Spec.ProviderID] = n
		}
	}
	return ix
}

// NodeOf is nc's Node, nil when it has none among the indexed nodes.
func (ix NodeIndex) NodeOf(nc *karpv1.NodeClaim) *corev1.Node {
	if n, ok := ix.byName[nc.Status.NodeName]; ok && nc.Status.NodeName != "" {
		return n
	}
	if n, ok := ix.byProviderID[nc.Status.ProviderID]; ok && nc.Status.ProviderID != "" {
		return n
	}
	return nil
}

// Node is the indexed node named name, or nil.
func (ix NodeIndex) Node(name string) *corev1.Node { return ix.byName[name] }
