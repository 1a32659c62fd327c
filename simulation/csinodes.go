package simulation

import (
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// SetCSINode sets the CSINode of node name in the snapshot (nil removes it), for a node that
// does not exist yet: NodeVolumeLimits reads a node's attach limits from its CSINode, and
// without one a node's limits are unlimited. The change is journaled; it does not change the
// generation, since no PreFilter reads CSINodes.
func (s *Snapshot) SetCSINode(name string, csi *storagev1.CSINode) {
	prev, had := s.csiNodes[name]
	if !had && csi == nil {
		return
	}
	if s.top() != nil {
		s.journal = append(s.journal, change{kind: csiNodeSet, node: name, csi: prev})
	}
	s.putCSINode(name, csi)
}

func (s *Snapshot) putCSINode(name string, csi *storagev1.CSINode) {
	if csi == nil {
		delete(s.csiNodes, name)
		return
	}
	s.csiNodes[name] = csi
}

// CSINode returns the CSINode set for node name with SetCSINode.
func (s *Snapshot) CSINode(name string) (*storagev1.CSINode, bool) {
	csi, ok := s.csiNodes[name]
	return csi, ok
}

// csiNodeSource is a snapshot holding CSINodes of its own (hypothetical nodes').
type csiNodeSource interface {
	CSINode(name string) (*storagev1.CSINode, bool)
}

// csiManager gives NodeVolumeLimits the snapshot's CSINodes before the cluster's: a node that
// exists keeps the CSINode its drivers published; a hypothetical node has the one its
// instance type will publish.
type csiManager struct {
	snapshot csiNodeSource
	cluster  storagelisters.CSINodeLister
}

var (
	_ fwk.CSIManager    = csiManager{}
	_ fwk.CSINodeLister = csiManager{}
)

func (m csiManager) CSINodes() fwk.CSINodeLister { return m }

func (m csiManager) Get(name string) (*storagev1.CSINode, error) {
	if csi, ok := m.snapshot.CSINode(name); ok {
		return csi, nil
	}
	return m.cluster.Get(name)
}

func (m csiManager) List() ([]*storagev1.CSINode, error) {
	list, err := m.cluster.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	if s, ok := m.snapshot.(*Snapshot); ok {
		for _, csi := range s.csiNodes {
			list = append(list, csi)
		}
	}
	return list, nil
}
