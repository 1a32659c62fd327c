package solver

import (
	"maps"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/scheduling"
	"github.com/joinery-dev/joinery/simulation"
)

// claim is a NodeClaim in progress, in the snapshot as a hypothetical node: a requirement set,
// the instance types still possible, and the pods planned onto it. It is either new in this
// batch (pool set) or an existing NodeClaim still launching (inFlight set), whose spec can no
// longer change.
type claim struct {
	index    int
	name     string // the hypothetical node's name
	pool     *pool
	inFlight *karpv1.NodeClaim

	reqs   scheduling.Requirements
	its    cloudprovider.InstanceTypes // fit requests, in the pool's price order
	taints []corev1.Taint
	// bound is the allocatable the Filters see: an upper bound over its (or the launched
	// NodeClaim's allocatable). The solver's arithmetic narrows its; the bound stays, so that
	// the Filters never reject for resources what some remaining type would hold.
	bound    corev1.ResourceList
	boundVec vec
	// fixed is set for an in-flight NodeClaim that reported its allocatable.
	fixed bool

	requests vec // pods and daemons
	pods     []*corev1.Pod
	labels   map[string]string // labels on the concrete node besides reqs'
	// current caches nodeLabels(reqs).
	current map[string]string
	// labelsVersion counts the changes of reqs, so marks made for the node's old labels
	// (memo.spread) are recognised as outdated.
	labelsVersion int
}

// currentLabels are the labels of the claim's node as it is in the snapshot.
func (c *claim) currentLabels() map[string]string {
	if c.current == nil {
		c.current = c.nodeLabels(c.reqs)
	}
	return c.current
}

// setRequirements narrows the claim's requirements (its node was updated to match).
func (c *claim) setRequirements(reqs scheduling.Requirements) {
	if len(reqs) != len(c.reqs) || !sameRequirements(reqs, c.reqs) {
		c.labelsVersion++
	}
	c.reqs = reqs
	c.current = nil
}

// node builds the Node the Filters see for reqs.
func (c *claim) node(reqs scheduling.Requirements) *corev1.Node {
	return simulation.NewHypotheticalNode(simulation.NodeTemplate{
		Name:         c.name,
		Requirements: reqs,
		Labels:       c.labels,
		Taints:       c.taints,
		Allocatable:  c.bound,
	})
}

// holds reports whether some remaining instance type holds requests.
func (c *claim) holds(a allocatables, its cloudprovider.InstanceTypes, requests vec) bool {
	if !requests.fits(c.boundVec) {
		return false
	}
	if c.fixed {
		return true
	}
	return a.anyFits(its, requests)
}

// nodeLabels are the labels the claim's concrete node has now.
func (c *claim) nodeLabels(reqs scheduling.Requirements) map[string]string {
	labels := reqs.Labels()
	maps.Copy(labels, c.labels)
	return labels
}
