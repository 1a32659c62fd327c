package disruption

import (
	"context"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/scheduling"
	"github.com/joinery-dev/joinery/simulation"
	"github.com/joinery-dev/joinery/simulation/solver"
)

// The cluster as the solver sees it during a simulation.

// lazyState is c without its nodes being deleted (a View with no candidate) and the offerings
// recorded unavailable, computed only if the planner reads the cluster.
type lazyState struct {
	c           *Cluster
	unavailable map[cloudprovider.OfferingKey]time.Time
	view        *View
}

var _ solver.OfferingState = (*lazyState)(nil)

func (l *lazyState) get() *View {
	if l.view == nil {
		l.view, _ = newView(l.c, nil, l.unavailable)
	}
	return l.view
}

func (l *lazyState) NodePools(ctx context.Context) ([]*karpv1.NodePool, error) {
	return l.get().NodePools(ctx)
}
func (l *lazyState) NodeClaims(ctx context.Context) ([]*karpv1.NodeClaim, error) {
	return l.get().NodeClaims(ctx)
}
func (l *lazyState) Nodes(ctx context.Context) ([]*corev1.Node, error) { return l.get().Nodes(ctx) }
func (l *lazyState) Pods(ctx context.Context) ([]*corev1.Pod, error)   { return l.get().Pods(ctx) }
func (l *lazyState) DaemonSets(ctx context.Context) ([]*appsv1.DaemonSet, error) {
	return l.get().DaemonSets(ctx)
}
func (l *lazyState) OfferingUnavailable(capacityType, instanceType, zone string) bool {
	return offeringIn(l.unavailable, capacityType, instanceType, zone)
}

// View is the cluster one simulation plans on (a solver.OfferingState): without the
// candidates (their Nodes and NodeClaims), without Nodes being deleted, with the candidates'
// pods as unbound copies, and with the offerings recorded unavailable when the simulation
// began. Each simulation builds its own (newView) and nothing changes it after.
type View struct {
	nodePools  []*karpv1.NodePool
	nodeClaims []*karpv1.NodeClaim
	nodes      []*corev1.Node
	pods       []*corev1.Pod
	daemonSets []*appsv1.DaemonSet
	// unavailable are the offerings known not to launch.
	unavailable map[cloudprovider.OfferingKey]time.Time
}

var _ solver.OfferingState = (*View)(nil)

// OfferingUnavailable reports an offering the view's record says does not launch.
func (v *View) OfferingUnavailable(capacityType, instanceType, zone string) bool {
	return offeringIn(v.unavailable, capacityType, instanceType, zone)
}

func offeringIn(record map[cloudprovider.OfferingKey]time.Time, capacityType, instanceType, zone string) bool {
	_, ok := record[cloudprovider.OfferingKey{CapacityType: capacityType, InstanceType: instanceType, Zone: zone}]
	return ok
}

func sameKeys[K comparable, V any](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}

// newView returns the view of c without cands, with the unavailable offerings, and the batch
// to plan: the candidates' pods (unbound copies) and the cluster's pending pods.
func newView(c *Cluster, cands []*Candidate, unavailable map[cloudprovider.OfferingKey]time.Time) (*View, []*corev1.Pod) {
	v := &View{unavailable: unavailable}
	removedClaims, removedNodes := sets.New[string](), sets.New[string]()
	for _, cand := range cands {
		removedClaims.Insert(cand.NodeClaim.Name)
		removedNodes.Insert(cand.Node.Name)
	}
	// Candidates reserved by the pass's earlier commands are gone too, their pods pending: they
	// must keep a place on the nodes (Simulation.Displaced), and cands' pods take what is left.
	var reservedPods []*corev1.Pod
	if len(cands) > 0 {
		for _, cand := range c.reservedCandidates() {
			removedClaims.Insert(cand.NodeClaim.Name)
			removedNodes.Insert(cand.Node.Name)
			for _, p := range cand.Pods {
				reservedPods = append(reservedPods, unbound(p))
			}
		}
	}
	replacements, moved := c.launchedPods(removedClaims, removedNodes)
	for _, nc := range c.NodeClaims {
		if removedClaims.Has(nc.Name) {
			continue
		}
		if nc.DeletionTimestamp != nil {
			if n := c.NodeOf[nc.Name]; n != nil {
				removedNodes.Insert(n.Name)
			}
			continue
		}
		v.nodeClaims = append(v.nodeClaims, nc)
	}
	v.nodeClaims = append(v.nodeClaims, replacements...)
	for _, n := range c.Nodes {
		if n.DeletionTimestamp != nil {
			removedNodes.Insert(n.Name)
		}
	}
	for _, name := range sortedKeys(c.NodePools) {
		v.nodePools = append(v.nodePools, c.NodePools[name])
	}
	v.nodes = make([]*corev1.Node, 0, len(c.Nodes))
	for _, name := range sortedKeys(c.Nodes) {
		if !removedNodes.Has(name) {
			v.nodes = append(v.nodes, c.Nodes[name])
		}
	}
	batch := reservedPods // committed first: they need their room before cands' pods
	for _, cand := range cands {
		for _, p := range cand.Pods {
			batch = append(batch, unbound(p))
		}
	}
	v.pods = make([]*corev1.Pod, 0, len(batch)+len(c.Pods)+len(moved))
	v.pods = append(v.pods, batch...)
	v.pods = append(v.pods, moved...) // placed, not planned: they are no part of the batch
	for _, p := range c.Pods {
		switch {
		case scheduling.PodFinished(p) || p.DeletionTimestamp != nil:
		case p.Spec.NodeName == "":
			v.pods = append(v.pods, p)
			batch = append(batch, p)
		case !removedNodes.Has(p.Spec.NodeName):
			v.pods = append(v.pods, p)
		}
	}
	v.daemonSets = c.DaemonSets
	return v, batch
}

// launchedPods applies the pass's launching commands (Cluster.launching) as done: it adds
// their candidates to removedClaims and removedNodes, and returns their replacements, each a
// launching NodeClaim named after its command's first candidate with the pods it receives
// planned onto it (the solver counts them there and fills the rest of its room), and the moved
// pods: bound to the existing node each goes to, or pending and planned onto a replacement.
func (c *Cluster) launchedPods(removedClaims, removedNodes sets.Set[string]) ([]*karpv1.NodeClaim, []*corev1.Pod) {
	var replacements []*karpv1.NodeClaim
	var moved []*corev1.Pod
	byName := map[string]*karpv1.NodeClaim{}
	for _, cmd := range c.launching {
		for _, cand := range cmd.Candidates {
			removedClaims.Insert(cand.NodeClaim.Name)
			removedNodes.Insert(cand.Node.Name)
		}
		names := make([]string, len(cmd.Replacements))
		for i, r := range cmd.Replacements {
			nc := r.DeepCopy()
			nc.GenerateName = ""
			nc.Name = passReplacementName(cmd, i)
			if i < len(cmd.narrowed) && cmd.narrowed[i] != nil {
				// Any of its options, not only the cheapest few chosen for its own pods: the
				// pods of this command that land on it choose its types again (passRaises).
				setInstanceTypes(nc, cmd.narrowed[i].names())
			}
			names[i] = nc.Name
			byName[nc.Name] = nc
			replacements = append(replacements, nc)
		}
		for _, cand := range cmd.Candidates {
			for _, p := range cand.Pods {
				dest, ok := cmd.Destinations[p.UID]
				if !ok {
					continue
				}
				if i, ok := replacementIndex(dest); ok && i < len(names) {
					dest = names[i]
				}
				switch {
				case byName[dest] != nil:
					simulation.AddPlannedPods(byName[dest], p.UID)
					moved = append(moved, unbound(p))
				case c.NodeOf[dest] != nil:
					moved = append(moved, boundTo(p, c.NodeOf[dest].Name))
				case c.Nodes[dest] != nil:
					moved = append(moved, boundTo(p, dest))
				}
			}
		}
	}
	return replacements, moved
}

// passReplacementName is what the pass calls the i-th replacement of cmd, a launching command
// it chose, in the views of later commands: named after its first candidate.
func passReplacementName(cmd *Command, i int) string {
	return cmd.Candidates[0].Name() + "-" + replacementLabel(i)
}

// passReplacement finds the launching command of the pass, and the index of its replacement,
// that name names in later commands' views (passReplacementName).
func (c *Cluster) passReplacement(name string) (*Command, int, bool) {
	for _, cmd := range c.launching {
		label, ok := strings.CutPrefix(name, cmd.Candidates[0].Name()+"-")
		if !ok {
			continue
		}
		if i, ok := replacementIndex(label); ok && i < len(cmd.Replacements) {
			return cmd, i, true
		}
	}
	return nil, 0, false
}

// boundTo is a copy of p running on node.
func boundTo(p *corev1.Pod, node string) *corev1.Pod {
	moved := p.DeepCopy()
	moved.Spec.NodeName = node
	return moved
}

// unbound is a copy of p as a pending pod, to be placed again.
func unbound(p *corev1.Pod) *corev1.Pod {
	moved := p.DeepCopy()
	moved.Spec.NodeName = ""
	moved.Status = corev1.PodStatus{Phase: corev1.PodPending}
	return moved
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (v *View) NodePools(context.Context) ([]*karpv1.NodePool, error) {
	return v.nodePools, nil
}

func (v *View) NodeClaims(context.Context) ([]*karpv1.NodeClaim, error) {
	return v.nodeClaims, nil
}

func (v *View) Nodes(context.Context) ([]*corev1.Node, error) {
	return v.nodes, nil
}

func (v *View) Pods(context.Context) ([]*corev1.Pod, error) {
	return v.pods, nil
}

func (v *View) DaemonSets(context.Context) ([]*appsv1.DaemonSet, error) {
	return v.daemonSets, nil
}
