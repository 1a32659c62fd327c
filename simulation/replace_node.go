package simulation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// ReplaceNode swaps the Node object of a node in the snapshot, keeping its pods: the solver
// narrows a hypothetical node's open labels (a zone chosen for a topology spread) without
// re-adding the pods already planned onto it. The change is journaled like any other.
func (s *Snapshot) ReplaceNode(node *corev1.Node) error {
	ni, err := s.writable(node.Name)
	if err != nil {
		return fmt.Errorf("replacing node: %w", err)
	}
	entry := logEntry{kind: logNodeReplaced, prev: s.viewOf(ni), node: nodeView(node)}
	entry.pods = make([]fwk.PodInfo, len(ni.Pods))
	copy(entry.pods, ni.Pods)
	ni.SetNode(node)
	s.bump()
	s.record(entry)
	return nil
}
