package simulation

import (
	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// logKind is the kind of a change to the snapshot's content.
type logKind uint8

const (
	logPodAdded logKind = iota
	logPodRemoved
	logNodeAdded    // a node without pods
	logNodeReplaced // the node object changed, its pods stayed
	logNodeRemoved  // a node removed with its pods
	// logOpaque is a change cached PreFilter states cannot follow: a pod reserved whose
	// Reserve changed plugin bookkeeping (volumes, resource claims).
	logOpaque
)

// logEntry is one change, with what the PreFilter extensions need to replay it: the pod, and
// views of the node (its Node object at the time, without pods).
type logEntry struct {
	kind logKind
	// gen is the generation the change produced; generations are never reused, so an entry
	// still in the log at the same index with the same gen is the same change.
	gen  uint64
	pod  fwk.PodInfo
	pods []fwk.PodInfo // the node's pods, for logNodeReplaced and logNodeRemoved
	node fwk.NodeInfo
	prev fwk.NodeInfo // the node before, for logNodeReplaced
}

func (s *Snapshot) record(e logEntry) {
	e.gen = s.generation
	s.log = append(s.log, e)
}

// MarkOpaque records that something outside the snapshot's own changes (a Reserve with side
// effects) changed what PreFilter would compute, so cached PreFilter states are recomputed.
func (s *Snapshot) MarkOpaque() {
	s.bump()
	s.record(logEntry{kind: logOpaque})
}

// nodeView is a NodeInfo holding only node: what the PreFilter extensions look at.
func nodeView(node *corev1.Node) fwk.NodeInfo {
	ni := framework.NewNodeInfo()
	ni.SetNode(node)
	return ni
}

// viewOf returns a view of ni's current Node object, shared by the entries that need one.
func (s *Snapshot) viewOf(ni *framework.NodeInfo) fwk.NodeInfo {
	node := ni.Node()
	if v, ok := s.views[node]; ok {
		return v
	}
	if s.views == nil {
		s.views = map[*corev1.Node]fwk.NodeInfo{}
	}
	v := nodeView(node)
	s.views[node] = v
	return v
}
