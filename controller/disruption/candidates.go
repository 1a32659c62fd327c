package disruption

import (
	"cmp"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/scheduling"
	"github.com/joinery-dev/joinery/simulation/buffer"
)

// Candidate is a node disruption may act on: an initialized NodeClaim of a NodePool with its
// Node, and the pods that would have to move.
type Candidate struct {
	NodeClaim *karpv1.NodeClaim
	Node      *corev1.Node
	NodePool  *karpv1.NodePool
	// Pods are the pods that would be rescheduled elsewhere: not DaemonSet pods, not static
	// pods, not finished or already terminating.
	Pods []*corev1.Pod
}

// Name is the candidate's NodeClaim name.
func (c *Candidate) Name() string { return c.NodeClaim.Name }

// Blocked is a node that is not a candidate, and why (the text of the DisruptionBlocked event).
type Blocked struct {
	NodeClaim *karpv1.NodeClaim
	Node      *corev1.Node
	// Reason is the event reason: DisruptionBlocked when empty, Unconsolidatable for a
	// consolidation candidate that cannot be consolidated.
	Reason  string
	Message string
}

// IsReschedulable reports whether pod would have to run elsewhere if its node went away.
func IsReschedulable(p *corev1.Pod) bool {
	return !scheduling.PodFinished(p) && p.DeletionTimestamp == nil && !scheduling.PodOwnedByDaemonSet(p) && !scheduling.PodIsMirror(p)
}

// isEvictable reports whether the termination controller's drain would evict pod, so its
// do-not-disrupt annotation and PDBs matter.
func isEvictable(p *corev1.Pod) bool {
	return !scheduling.PodFinished(p) && p.DeletionTimestamp == nil && !scheduling.PodIsMirror(p) && !buffer.IsVirtual(p)
}

// doNotDisrupt reports whether obj carries karpenter.sh/do-not-disrupt: "true".
func doNotDisrupt(obj metav1.Object) bool {
	return obj.GetAnnotations()[karpv1.DoNotDisruptAnnotationKey] == "true"
}

// Candidates returns the candidates for a disruption with reason, in NodeClaim name order, and
// the nodes blocked from it with why. NodeClaims that are not disruptable at all — standalone,
// not initialized, without a Node, being deleted or already chosen (by a command, or set aside
// by one this pass chose: its candidate or where its pods go), or of a static NodePool
// for any reason but drift — are in neither list.
// A node whose zone the cloud provider suspends voluntary disruption in (Cluster.Suspended: an
// ARC zonal shift on AWS) is blocked for every reason, drift included.
// For an eventual method (class ClassEventual: drift), a NodeClaim with a
// terminationGracePeriod is a candidate even with blocking PDBs or do-not-disrupt pods (the
// seeds' TerminationGracePeriod section): its drain is bounded.
func (c *Cluster) Candidates(reason string, class Class) ([]*Candidate, []Blocked) {
	var cands []*Candidate
	var blocked []Blocked
	for _, nc := range c.NodeClaims {
		np := c.NodePoolOf(nc)
		node := c.NodeOf[nc.Name]
		if np == nil || node == nil || !isInitialized(nc) || c.isDeleting(nc) || c.setAside(nc, node) {
			continue
		}
		if np.Spec.Replicas != nil && reason != karpv1.DisruptionReasonDrifted {
			// A static NodePool keeps its count: consolidation never removes its nodes;
			// only drift replaces them (and expiration, outside this loop).
			continue
		}
		if c.Suspended != nil {
			if why := c.Suspended(node); why != "" {
				blocked = append(blocked, Blocked{NodeClaim: nc, Node: node, Message: "Cannot disrupt Node: " + why})
				continue
			}
		}
		if c.nominatedFor(node.Name) {
			// Karpenter's rule: a pending pod the scheduler nominated to this node is about to
			// land there; an "empty" node in a slow scale-up is not empty.
			blocked = append(blocked, Blocked{NodeClaim: nc, Node: node, Message: "Cannot disrupt Node: state node is nominated for a pending pod"})
			continue
		}
		podsOnNode := c.PodsByNode[node.Name]
		if why := c.blocker(nc, node, podsOnNode, class == ClassEventual && nc.Spec.TerminationGracePeriod != nil); why != "" {
			blocked = append(blocked, Blocked{NodeClaim: nc, Node: node, Message: "Cannot disrupt Node: " + why})
			continue
		}
		cand := &Candidate{NodeClaim: nc, Node: node, NodePool: np}
		for _, p := range podsOnNode {
			if IsReschedulable(p) {
				cand.Pods = append(cand.Pods, p)
			}
		}
		cands = append(cands, cand)
	}
	return cands, blocked
}

// blocker says why the node cannot be disrupted voluntarily, or "". boundedDrain skips the
// pod-level controls (the drain ends at the terminationGracePeriod regardless).
func (c *Cluster) blocker(nc *karpv1.NodeClaim, node *corev1.Node, pods []*corev1.Pod, boundedDrain bool) string {
	if doNotDisrupt(node) {
		return "node is annotated with " + karpv1.DoNotDisruptAnnotationKey
	}
	if doNotDisrupt(nc) {
		return "nodeclaim is annotated with " + karpv1.DoNotDisruptAnnotationKey
	}
	if boundedDrain {
		return ""
	}
	// The first pod by namespace/name that blocks is named: a do-not-disrupt pod before a pod
	// a PDB protects. One scan finds both; sorting every node's pods cost more than the rest
	// of a 2,000-node decision's candidate list.
	var annotated, guarded *corev1.Pod
	var guardedBy string
	for _, p := range pods {
		if !isEvictable(p) {
			continue
		}
		if doNotDisrupt(p) {
			if annotated == nil || comparePodKeys(p, annotated) < 0 {
				annotated = p
			}
			continue
		}
		if annotated != nil || (guarded != nil && comparePodKeys(p, guarded) >= 0) {
			continue // only the first blocking pod is named
		}
		if pdb := c.blockingPDB(p); pdb != "" {
			guarded, guardedBy = p, pdb
		}
	}
	switch {
	case annotated != nil:
		return fmt.Sprintf("pod %s/%s has %s annotation", annotated.Namespace, annotated.Name, karpv1.DoNotDisruptAnnotationKey)
	case guarded != nil:
		return fmt.Sprintf("pdb %s prevents pod evictions", guardedBy)
	}
	return ""
}

// comparePodKeys compares the pods' "namespace/name" keys as strings, without building them.
func comparePodKeys(a, b *corev1.Pod) int {
	la, lb := len(a.Namespace)+1+len(a.Name), len(b.Namespace)+1+len(b.Name)
	for i := range min(la, lb) {
		if ca, cb := podKeyByte(a, i), podKeyByte(b, i); ca != cb {
			if ca < cb {
				return -1
			}
			return 1
		}
	}
	return cmp.Compare(la, lb)
}

// podKeyByte is byte i of the pod's "namespace/name".
func podKeyByte(p *corev1.Pod, i int) byte {
	switch {
	case i < len(p.Namespace):
		return p.Namespace[i]
	case i == len(p.Namespace):
		return '/'
	}
	return p.Name[i-len(p.Namespace)-1]
}

// blockingPDB names the first PodDisruptionBudget matching pod that allows no disruption
// now; every PDB of a pod must allow its eviction.
func (c *Cluster) blockingPDB(p *corev1.Pod) string {
	for _, pdb := range c.pdbSelectors() {
		if pdb.namespace != p.Namespace || (pdb.selector != nil && !pdb.selector.Matches(labels.Set(p.Labels))) {
			continue
		}
		if pdb.allowed <= 0 || pdb.selector == nil {
			// A selector the eviction API cannot read refuses evictions; so do we.
			return pdb.name
		}
	}
	return ""
}

// pdbSelector is a PodDisruptionBudget with its selector parsed once per Cluster.
type pdbSelector struct {
	namespace, name string
	selector        labels.Selector // nil: unparseable
	allowed         int32
}

func (c *Cluster) pdbSelectors() []pdbSelector {
	c.pdbOnce.Do(func() {
		for _, pdb := range c.PDBs {
			s := pdbSelector{namespace: pdb.Namespace, name: pdb.Namespace + "/" + pdb.Name, allowed: pdb.Status.DisruptionsAllowed}
			if sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err == nil {
				s.selector = sel
			}
			c.pdbs = append(c.pdbs, s)
		}
	})
	return c.pdbs
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// nominatedFor reports whether a pending pod is nominated to node (status.nominatedNodeName,
// which kube-scheduler sets when a pod is placed on a node it waits for).
func (c *Cluster) nominatedFor(node string) bool {
	c.nominatedOnce.Do(func() {
		c.nominated = map[string]bool{}
		for _, p := range c.Pods {
			if p.Spec.NodeName == "" && p.Status.NominatedNodeName != "" && isEvictable(p) {
				c.nominated[p.Status.NominatedNodeName] = true
			}
		}
	})
	return c.nominated[node]
}
