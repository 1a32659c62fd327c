package simulation

import (
	"errors"
	"fmt"

	fwk "k8s.io/kube-scheduler/framework"
)

var (
	_ fwk.SharedLister      = (*Snapshot)(nil)
	_ fwk.NodeInfoLister    = (*Snapshot)(nil)
	_ fwk.StorageInfoLister = (*Snapshot)(nil)
	_ fwk.PodGroupManager   = (*Snapshot)(nil)
)

// NodeInfos implements fwk.SharedLister.
func (s *Snapshot) NodeInfos() fwk.NodeInfoLister { return s }

// StorageInfos implements fwk.SharedLister.
func (s *Snapshot) StorageInfos() fwk.StorageInfoLister { return s }

// PodGroupStates implements fwk.SharedLister and fwk.PodGroupManager.
func (s *Snapshot) PodGroupStates() fwk.PodGroupStateLister { return podGroupsNotSimulated{} }

// List returns every node, in order. The slice is the snapshot's own: read it, don't keep it
// across changes.
func (s *Snapshot) List() ([]fwk.NodeInfo, error) { return s.list, nil }

// HavePodsWithAffinityList returns the nodes running a pod with (anti-)affinity terms.
func (s *Snapshot) HavePodsWithAffinityList() ([]fwk.NodeInfo, error) {
	s.buildDerived()
	return s.withAffinity, nil
}

// HavePodsWithRequiredAntiAffinityList returns the nodes running a pod with required
// anti-affinity terms.
func (s *Snapshot) HavePodsWithRequiredAntiAffinityList() ([]fwk.NodeInfo, error) {
	s.buildDerived()
	return s.withAntiAffinity, nil
}

// Get returns the named node.
func (s *Snapshot) Get(nodeName string) (fwk.NodeInfo, error) {
	if ni, ok := s.nodes[nodeName]; ok {
		return ni, nil
	}
	return nil, fmt.Errorf("nodeinfo not found for node name %q", nodeName)
}

// IsPVCUsedByPods reports whether a pod in the snapshot uses the claim "namespace/name".
func (s *Snapshot) IsPVCUsedByPods(key string) bool { return s.pvcRefs[key] > 0 }

// buildDerived rebuilds the affinity lists once per generation. PreFilter asks for them once
// per pod, so building on demand costs one scan of the node list per change at most.
func (s *Snapshot) buildDerived() {
	s.derived.Lock()
	defer s.derived.Unlock()
	if s.derivedFor == s.generation {
		return
	}
	s.withAffinity = s.withAffinity[:0:0]
	s.withAntiAffinity = s.withAntiAffinity[:0:0]
	for _, ni := range s.list {
		if len(ni.GetPodsWithAffinity()) > 0 {
			s.withAffinity = append(s.withAffinity, ni)
		}
		if len(ni.GetPodsWithRequiredAntiAffinity()) > 0 {
			s.withAntiAffinity = append(s.withAntiAffinity, ni)
		}
	}
	s.derivedFor = s.generation
}

// errPodGroupsNotSimulated: gang scheduling (the alpha GenericWorkload gate) is not part of
// the simulation; plugins asking for a pod group get this error instead of a made-up state.
var errPodGroupsNotSimulated = errors.New("pod groups are not simulated by joinery's engine")

type podGroupsNotSimulated struct{}

func (podGroupsNotSimulated) Get(namespace, name string) (fwk.PodGroupState, error) {
	return nil, fmt.Errorf("pod group %s/%s: %w", namespace, name, errPodGroupsNotSimulated)
}
