package simulation

import (
	"fmt"
	"math"
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/joinery-dev/joinery/scheduling"
)

// Snapshot is the cluster as the engine's Filters see it: real nodes and pods, plus
// hypothetical nodes and planned pods. It implements the framework's SharedLister.
//
// Changes are journaled: Fork starts a layer, Revert undoes the layer's changes and Commit
// folds them into the layer below, each in O(changes). A node is copied at most once per
// layer, on its first change (copy-on-write), so forking never copies the cluster.
//
// Reads (the lister methods) are safe from many goroutines; changes are not concurrent with
// anything.
type Snapshot struct {
	nodes map[string]*framework.NodeInfo
	list  []fwk.NodeInfo // nodes in insertion order, so plugins iterate deterministically
	index map[string]int // node name → position in list, below staleFrom (see position)
	// staleFrom is the first position of list whose node's index entry may be off: removing
	// or restoring a node moves every node after it, which position reindexes once, when a
	// position is asked for, instead of at every removal.
	staleFrom int
	pvcRefs   map[string]int // "namespace/name" → number of pods using the claim
	// csiNodes are the CSINodes of hypothetical nodes, by node name; the cluster's own come
	// from the informers (see csiNodes.go).
	csiNodes map[string]*storagev1.CSINode
	// slices are the ResourceSlices of hypothetical nodes, by node name; the cluster's own
	// come from the DRA manager (see resourceslices.go).
	slices map[string][]*resourceapi.ResourceSlice

	journal []change
	forks   []fork
	// log lists the changes to the content since the last Reset, oldest first; Revert drops
	// the reverted ones. The engine replays it onto cached PreFilter states (see prefilter.go).
	log []logEntry
	// epoch counts Resets, so cached states from before one are never replayed.
	epoch uint64
	views map[*corev1.Node]fwk.NodeInfo
	// labels indexes the nodes by their pods' labels once a PreFilter asks (affinitynodes.go);
	// nil until then.
	labels labelIndex
	// podInfos are the PodInfos of the pods loaded (and, fed by the informers, about to be):
	// consolidation reloads the cluster every pass, and most pods did not change.
	podInfos     *PodInfos
	podInfosOnce sync.Once
	// permanentUndo are undo callbacks of changes made outside any fork (or committed down
	// to it); Reset runs them, so plugin bookkeeping (assumed volumes, claims) never outlives
	// the content it was made for.
	permanentUndo []func()

	// generation identifies the content: it changes on every change and returns to the
	// fork's value on Revert, so results cached for a generation stay valid after a revert.
	generation     uint64
	lastGeneration uint64

	derived sync.Mutex
	// derivedFor is the generation the affinity lists below were built for.
	derivedFor       uint64
	withAffinity     []fwk.NodeInfo
	withAntiAffinity []fwk.NodeInfo
}

type fork struct {
	journalLen int
	logLen     int
	generation uint64
	// owned are the nodes this layer has already copied, which it may change in place.
	owned map[string]struct{}
}

type changeKind uint8

const (
	nodeReplaced changeKind = iota // prev is the node's NodeInfo before the layer copied it
	nodeAdded
	nodeRemoved // prev and index say where to put it back
	pvcCounted  // pvcRefs[pvc] changed by delta
	callback    // undo runs on Revert (e.g. Unreserve)
	csiNodeSet  // csi is the node's CSINode before (nil: none)
	slicesSet   // slices are the node's ResourceSlices before (hadSlices: any were set)
)

type change struct {
	kind  changeKind
	node  string
	prev  *framework.NodeInfo
	index int
	pvc   string
	delta int
	undo  func()
	csi   *storagev1.CSINode

	slices    []*resourceapi.ResourceSlice
	hadSlices bool
}

// NewSnapshot returns a snapshot of nodes and the pods assigned to them. Pods that are not
// assigned to one of nodes, or have terminated, are left out (kube-scheduler's cache leaves
// out terminated pods too).
func NewSnapshot(nodes []*corev1.Node, pods []*corev1.Pod) (*Snapshot, error) {
	s := &Snapshot{}
	if err := s.Reset(nodes, pods); err != nil {
		return nil, err
	}
	return s, nil
}

// Reset replaces the snapshot's content with nodes and pods. Open forks are reverted and
// every undo callback runs first. An engine keeps its framework across resets. A pod version
// loaded by the previous Reset, or observed since (PodInfos), keeps its PodInfo.
func (s *Snapshot) Reset(nodes []*corev1.Node, pods []*corev1.Pod) error {
	for len(s.forks) > 0 {
		if err := s.Revert(); err != nil {
			return err
		}
	}
	for i := len(s.permanentUndo) - 1; i >= 0; i-- {
		s.permanentUndo[i]()
	}
	s.permanentUndo = nil
	s.nodes = make(map[string]*framework.NodeInfo, len(nodes))
	s.list = make([]fwk.NodeInfo, 0, len(nodes))
	s.index = make(map[string]int, len(nodes))
	s.staleFrom = math.MaxInt
	s.pvcRefs = map[string]int{}
	s.csiNodes = map[string]*storagev1.CSINode{}
	s.slices = map[string][]*resourceapi.ResourceSlice{}
	s.journal, s.forks = nil, nil
	clear(s.log)
	s.log = s.log[:0]
	clear(s.views)
	s.labels = nil
	s.epoch++
	s.bump()
	for _, node := range nodes {
		if err := s.AddNode(node); err != nil {
			return err
		}
	}
	type assigned struct {
		pod *corev1.Pod
		ni  *framework.NodeInfo
	}
	var load []assigned
	for _, pod := range pods {
		if pod.Spec.NodeName == "" || scheduling.PodFinished(pod) {
			continue
		}
		ni, ok := s.nodes[pod.Spec.NodeName]
		if !ok {
			continue
		}
		if pod.UID == "" {
			return fmt.Errorf("pod %s/%s has no UID", pod.Namespace, pod.Name)
		}
		load = append(load, assigned{pod, ni})
	}
	loading := make([]*corev1.Pod, len(load))
	for i, a := range load {
		loading[i] = a.pod
	}
	for i, podInfo := range s.PodInfos().load(loading) {
		s.placePodInfo(load[i].ni, podInfo)
	}
	// No PreFilter state predates the load (epoch), so none replays it: the log starts
	// after it instead of holding an entry per node and pod of the cluster.
	clear(s.log)
	s.log = s.log[:0]
	s.bump()
	return nil
}

// PodInfos is the snapshot's cache of PodInfos, for the informers to fill ahead of a Reset.
func (s *Snapshot) PodInfos() *PodInfos {
	s.podInfosOnce.Do(func() { s.podInfos = &PodInfos{} })
	return s.podInfos
}

// Generation identifies the snapshot's content; see Snapshot.
func (s *Snapshot) Generation() uint64 { return s.generation }

// permanentLen is the number of log entries no Revert can drop.
func (s *Snapshot) permanentLen() int {
	if len(s.forks) == 0 {
		return len(s.log)
	}
	return s.forks[0].logLen
}

// Depth is the number of open forks.
func (s *Snapshot) Depth() int { return len(s.forks) }

// Fork starts a layer of changes that Revert can undo.
func (s *Snapshot) Fork() {
	s.forks = append(s.forks, fork{journalLen: len(s.journal), logLen: len(s.log), generation: s.generation})
}

// Revert undoes every change since the last Fork, last change first.
func (s *Snapshot) Revert() error {
	if len(s.forks) == 0 {
		return fmt.Errorf("revert without a fork")
	}
	top := s.forks[len(s.forks)-1]
	for i := len(s.journal) - 1; i >= top.journalLen; i-- {
		s.undo(s.journal[i])
		s.journal[i] = change{} // release references
	}
	s.journal = s.journal[:top.journalLen]
	clear(s.log[top.logLen:])
	s.log = s.log[:top.logLen]
	s.forks = s.forks[:len(s.forks)-1]
	s.generation = top.generation
	return nil
}

// Commit keeps the changes since the last Fork as part of the layer below it.
func (s *Snapshot) Commit() error {
	if len(s.forks) == 0 {
		return fmt.Errorf("commit without a fork")
	}
	top := s.forks[len(s.forks)-1]
	s.forks = s.forks[:len(s.forks)-1]
	if len(s.forks) == 0 {
		for _, c := range s.journal {
			if c.kind == callback {
				s.permanentUndo = append(s.permanentUndo, c.undo)
			}
		}
		clear(s.journal)
		s.journal = s.journal[:0]
		return nil
	}
	// The parent may now change the nodes this layer copied in place: the journal entries
	// that restore the parent's view of them are kept.
	parent := &s.forks[len(s.forks)-1]
	for name := range top.owned {
		parent.own(name)
	}
	return nil
}

func (f *fork) own(name string) {
	if f.owned == nil {
		f.owned = make(map[string]struct{})
	}
	f.owned[name] = struct{}{}
}

// AddNode adds a node with no pods; a hypothetical node is added the same way.
func (s *Snapshot) AddNode(node *corev1.Node) error {
	if _, ok := s.nodes[node.Name]; ok {
		return fmt.Errorf("node %q is already in the snapshot", node.Name)
	}
	ni := framework.NewNodeInfo()
	ni.SetNode(node)
	s.nodes[node.Name] = ni
	s.index[node.Name] = len(s.list)
	s.list = append(s.list, ni)
	if top := s.top(); top != nil {
		s.journal = append(s.journal, change{kind: nodeAdded, node: node.Name})
		top.own(node.Name)
	}
	s.bump()
	s.record(logEntry{kind: logNodeAdded, node: s.viewOf(ni)})
	return nil
}

// RemoveNode removes a node and its pods.
func (s *Snapshot) RemoveNode(name string) error {
	ni, ok := s.nodes[name]
	if !ok {
		return fmt.Errorf("node %q is not in the snapshot", name)
	}
	i := s.find(name)
	if i < 0 {
		return fmt.Errorf("node %q is not in the snapshot's node list", name)
	}
	entry := logEntry{kind: logNodeRemoved, node: s.viewOf(ni), pods: make([]fwk.PodInfo, len(ni.Pods))}
	copy(entry.pods, ni.Pods)
	for _, p := range ni.Pods {
		s.countPVCs(p.GetPod(), -1)
	}
	s.SetCSINode(name, nil)
	s.SetResourceSlices(name, nil)
	s.list = append(s.list[:i], s.list[i+1:]...)
	delete(s.nodes, name)
	delete(s.index, name)
	s.staleFrom = min(s.staleFrom, i)
	if s.top() != nil {
		s.journal = append(s.journal, change{kind: nodeRemoved, node: name, prev: ni, index: i})
	}
	s.bump()
	s.record(entry)
	return nil
}

// AddPod puts pod on node nodeName (a planned pod when the pod is pending). The stored pod
// is a shallow copy with spec.nodeName set, as the scheduler's cache stores assumed pods.
func (s *Snapshot) AddPod(pod *corev1.Pod, nodeName string) error {
	if pod.UID == "" {
		return fmt.Errorf("pod %s/%s has no UID", pod.Namespace, pod.Name)
	}
	ni, err := s.writable(nodeName)
	if err != nil {
		return err
	}
	if pod.Spec.NodeName != nodeName {
		assigned := *pod
		assigned.Spec.NodeName = nodeName
		pod = &assigned
	}
	// As NodeInfo.AddPod does, an affinity term that does not parse is ignored (the API
	// server does not validate them all); the PodInfo is kept for the log.
	podInfo, _ := framework.NewPodInfo(pod)
	s.addPodInfo(ni, podInfo)
	return nil
}

// addPodInfo adds a pod to ni, which the current layer may change.
func (s *Snapshot) addPodInfo(ni *framework.NodeInfo, podInfo *framework.PodInfo) {
	s.placePodInfo(ni, podInfo)
	s.bump()
	s.record(logEntry{kind: logPodAdded, pod: podInfo, node: s.viewOf(ni)})
}

// placePodInfo is addPodInfo without the log entry.
func (s *Snapshot) placePodInfo(ni *framework.NodeInfo, podInfo *framework.PodInfo) {
	ni.AddPodInfo(podInfo)
	pod := podInfo.Pod
	if s.labels != nil {
		s.labels.add(pod, ni.Node().Name)
	}
	s.countPVCs(pod, 1)
}

// RemovePod removes pod (matched by UID) from node nodeName.
func (s *Snapshot) RemovePod(pod *corev1.Pod, nodeName string) error {
	ni, err := s.writable(nodeName)
	if err != nil {
		return err
	}
	var removed fwk.PodInfo
	for _, p := range ni.Pods {
		if p.GetPod().UID == pod.UID {
			removed = p
			break
		}
	}
	if err := ni.RemovePod(klog.Background(), pod); err != nil {
		return fmt.Errorf("removing pod from snapshot: %w", err)
	}
	s.countPVCs(pod, -1)
	s.bump()
	s.record(logEntry{kind: logPodRemoved, pod: removed, node: s.viewOf(ni)})
	return nil
}

// OnUndo registers undo to run when the change just made is undone: when its layer is
// reverted, or at the next Reset.
func (s *Snapshot) OnUndo(undo func()) {
	if s.top() == nil {
		s.permanentUndo = append(s.permanentUndo, undo)
		return
	}
	s.journal = append(s.journal, change{kind: callback, undo: undo})
}

// NodeNames returns the names of the nodes in the snapshot, in order.
func (s *Snapshot) NodeNames() []string {
	names := make([]string, len(s.list))
	for i, ni := range s.list {
		names[i] = ni.Node().Name
	}
	return names
}

func (s *Snapshot) top() *fork {
	if len(s.forks) == 0 {
		return nil
	}
	return &s.forks[len(s.forks)-1]
}

// writable returns the node's NodeInfo that the current layer may change, copying it first
// if this layer has not yet.
func (s *Snapshot) writable(name string) (*framework.NodeInfo, error) {
	ni, ok := s.nodes[name]
	if !ok {
		return nil, fmt.Errorf("node %q is not in the snapshot", name)
	}
	top := s.top()
	if top == nil {
		return ni, nil
	}
	if _, owned := top.owned[name]; owned {
		return ni, nil
	}
	clone := ni.SnapshotConcrete()
	s.journal = append(s.journal, change{kind: nodeReplaced, node: name, prev: ni})
	s.nodes[name] = clone
	s.list[s.position(name)] = clone
	top.own(name)
	return clone, nil
}

func (s *Snapshot) countPVCs(pod *corev1.Pod, delta int) {
	for i := range pod.Spec.Volumes {
		claim := pod.Spec.Volumes[i].PersistentVolumeClaim
		if claim == nil {
			continue
		}
		key := pod.Namespace + "/" + claim.ClaimName
		s.pvcRefs[key] += delta
		if s.pvcRefs[key] == 0 {
			delete(s.pvcRefs, key)
		}
		if s.top() != nil {
			s.journal = append(s.journal, change{kind: pvcCounted, pvc: key, delta: delta})
		}
	}
}

func (s *Snapshot) undo(c change) {
	switch c.kind {
	case nodeReplaced:
		s.nodes[c.node] = c.prev
		s.list[s.position(c.node)] = c.prev
	case nodeAdded:
		// Changes are undone last first, so a node added in this layer is the last one.
		last := len(s.list) - 1
		s.list[last] = nil
		s.list = s.list[:last]
		delete(s.nodes, c.node)
		delete(s.index, c.node)
	case nodeRemoved:
		s.list = append(s.list, nil)
		copy(s.list[c.index+1:], s.list[c.index:])
		s.list[c.index] = c.prev
		s.nodes[c.node] = c.prev
		s.index[c.node] = c.index
		s.staleFrom = min(s.staleFrom, c.index)
	case pvcCounted:
		s.pvcRefs[c.pvc] -= c.delta
		if s.pvcRefs[c.pvc] == 0 {
			delete(s.pvcRefs, c.pvc)
		}
	case callback:
		c.undo()
	case csiNodeSet:
		s.putCSINode(c.node, c.csi)
	case slicesSet:
		s.putResourceSlices(c.node, c.slices, c.hadSlices)
	}
}

// position returns the position in list of a node in the snapshot, reindexing the nodes from
// staleFrom on first if its entry may be off.
func (s *Snapshot) position(name string) int {
	if i := s.index[name]; i < s.staleFrom {
		return i
	}
	for j := s.staleFrom; j < len(s.list); j++ {
		s.index[s.list[j].Node().Name] = j
	}
	s.staleFrom = math.MaxInt
	return s.index[name]
}

// find is position for a node about to be removed, which moves the nodes after it again:
// an entry that may be off is looked up in the list instead of reindexing it. A node at or
// after staleFrom in the list has its entry at or after staleFrom too, since only the nodes
// after a removed or restored one moved. It returns -1 for a node not in the list.
func (s *Snapshot) find(name string) int {
	if i := s.index[name]; i < s.staleFrom {
		return i
	}
	for j := s.staleFrom; j < len(s.list); j++ {
		if s.list[j].Node().Name == name {
			return j
		}
	}
	return -1
}

func (s *Snapshot) bump() {
	s.lastGeneration++
	s.generation = s.lastGeneration
}
