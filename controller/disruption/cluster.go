package disruption

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/scheduling"
	"github.com/joinery-dev/joinery/simulation"
)

// Cluster is one consistent read of what disruption decides on: every NodePool, NodeClaim,
// Node, Pod, PodDisruptionBudget and DaemonSet, with NodeClaims linked to their Nodes.
type Cluster struct {
	NodePools  map[string]*karpv1.NodePool
	NodeClaims []*karpv1.NodeClaim
	Nodes      map[string]*corev1.Node
	// Pods lists every pod; PodsByNode those bound, by node name.
	Pods       []*corev1.Pod
	PodsByNode map[string][]*corev1.Pod
	PDBs       []*policyv1.PodDisruptionBudget
	DaemonSets []*appsv1.DaemonSet
	// NodeOf maps a NodeClaim's name to its Node (nil while it has none).
	NodeOf map[string]*corev1.Node

	pdbOnce sync.Once
	pdbs    []pdbSelector
	// nominated are the nodes pending pods are nominated to (nominatedFor).
	nominatedOnce sync.Once
	nominated     map[string]bool

	// Suspended, when set, says why voluntary disruption of a node is suspended ("" when it
	// is not): the cloud provider's zone check (ZoneSuspender).
	Suspended func(node *corev1.Node) string

	// reserved are the candidates of commands this pass already chose, by NodeClaim name:
	// they wait for their validation with the rest, so no later command of the pass takes
	// them, and later commands are simulated as if they were gone and their pods pending.
	// They do not count against budgets: a command's budget is checked when it executes.
	reserved map[string]*Candidate
	// receiving are the nodes (and NodeClaims) those commands' pods were simulated onto: they
	// are not candidates for the rest of the pass either, since the pods will land there.
	receiving map[string]bool
	// launching are the commands this pass chose that launch replacements, in the order
	// chosen. Later commands are simulated on the cluster as it will be once they are done
	// (newView): their candidates gone, each moved pod on its destination — an existing
	// node, or the command's replacement as a launching NodeClaim with the pods planned onto
	// it, which has room for more. Every command is validated again against the real cluster
	// before it starts; with a budget of one node, a later command starts only once the
	// earlier ones are done, and its validation sees their replacements initialized.
	launching []*Command
	// launched are the candidates of those commands, by NodeClaim name.
	launched map[string]bool
	// arriving are the nodes, by name, that pods of commands already started are moving to
	// (Controller.arrivals): no candidates while they do. Unlike the reservations above, it
	// holds for the whole pass, validations included.
	arriving map[string]bool
}

// reserve sets cmd's candidates aside for the rest of the pass (Cluster.reserved), or, when
// cmd launches replacements, records it as done for the rest of the pass (Cluster.launching);
// either way the nodes its pods go to are no candidates (Cluster.receiving).
func (c *Cluster) reserve(cmd *Command) {
	if c.receiving == nil {
		c.receiving = map[string]bool{}
	}
	for _, dest := range cmd.Destinations {
		c.receiving[dest] = true
	}
	// The earlier commands' replacements that cmd's pods land on launch large enough for them.
	for _, r := range cmd.raises {
		simulation.RaisePlannedRequests(r.replacement, r.requests)
		if r.instanceTypes != nil {
			setInstanceTypes(r.replacement, r.instanceTypes)
		}
	}
	if len(cmd.Replacements) > 0 {
		c.launching = append(c.launching, cmd)
		if c.launched == nil {
			c.launched = map[string]bool{}
		}
		for _, cand := range cmd.Candidates {
			c.launched[cand.Name()] = true
		}
		return
	}
	if c.reserved == nil {
		c.reserved = map[string]*Candidate{}
	}
	for _, cand := range cmd.Candidates {
		c.reserved[cand.Name()] = cand
	}
}

// setAside reports whether nc, on node, is a candidate of or receives pods of a command the
// pass already chose, or of one started (Cluster.reserved, Cluster.launched,
// Cluster.receiving, Cluster.arriving).
func (c *Cluster) setAside(nc *karpv1.NodeClaim, node *corev1.Node) bool {
	return c.reserved[nc.Name] != nil || c.receiving[nc.Name] || c.launched[nc.Name] ||
		(node != nil && (c.receiving[node.Name] || c.arriving[node.Name]))
}

// nodeClaimAt is the NodeClaim named name, or the one whose node is named name; nil for none.
func (c *Cluster) nodeClaimAt(name string) *karpv1.NodeClaim {
	for _, nc := range c.NodeClaims {
		if nc.Name == name || nc.Status.NodeName == name {
			return nc
		}
	}
	return nil
}

// unreserve lifts every reservation.
func (c *Cluster) unreserve() { c.reserved, c.receiving, c.launching, c.launched = nil, nil, nil, nil }

// reservedCandidates are the reserved candidates in NodeClaim name order.
func (c *Cluster) reservedCandidates() []*Candidate {
	out := make([]*Candidate, 0, len(c.reserved))
	for _, name := range sortedKeys(c.reserved) {
		out = append(out, c.reserved[name])
	}
	return out
}

// LoadCluster lists the objects from r (the manager's cache).
func LoadCluster(ctx context.Context, r client.Reader) (*Cluster, error) {
	var (
		nps  karpv1.NodePoolList
		ncs  karpv1.NodeClaimList
		ns   corev1.NodeList
		ps   corev1.PodList
		pdbs policyv1.PodDisruptionBudgetList
		dss  appsv1.DaemonSetList
	)
	for _, l := range []struct {
		what string
		list client.ObjectList
	}{{"nodepools", &nps}, {"nodeclaims", &ncs}, {"nodes", &ns}, {"pods", &ps}, {"poddisruptionbudgets", &pdbs}, {"daemonsets", &dss}} {
		if err := r.List(ctx, l.list); err != nil {
			return nil, fmt.Errorf("listing %s: %w", l.what, err)
		}
	}
	c := &Cluster{NodePools: map[string]*karpv1.NodePool{}, Nodes: map[string]*corev1.Node{}, PodsByNode: map[string][]*corev1.Pod{}, NodeOf: map[string]*corev1.Node{}}
	for i := range nps.Items {
		c.NodePools[nps.Items[i].Name] = &nps.Items[i]
	}
	for i := range ncs.Items {
		c.NodeClaims = append(c.NodeClaims, &ncs.Items[i])
	}
	for i := range ns.Items {
		c.Nodes[ns.Items[i].Name] = &ns.Items[i]
	}
	for i := range ps.Items {
		p := &ps.Items[i]
		c.Pods = append(c.Pods, p)
		if p.Spec.NodeName != "" {
			c.PodsByNode[p.Spec.NodeName] = append(c.PodsByNode[p.Spec.NodeName], p)
		}
	}
	for i := range pdbs.Items {
		c.PDBs = append(c.PDBs, &pdbs.Items[i])
	}
	slices.SortFunc(c.PDBs, func(a, b *policyv1.PodDisruptionBudget) int {
		return compareStrings(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	for i := range dss.Items {
		c.DaemonSets = append(c.DaemonSets, &dss.Items[i])
	}
	c.link()
	return c, nil
}

// link maps NodeClaims to Nodes (scheduling.NodeIndex).
func (c *Cluster) link() {
	nodes := slices.Collect(maps.Values(c.Nodes))
	slices.SortFunc(nodes, func(a, b *corev1.Node) int { return compareStrings(a.Name, b.Name) })
	ix := scheduling.IndexNodes(nodes)
	slices.SortFunc(c.NodeClaims, func(a, b *karpv1.NodeClaim) int { return compareStrings(a.Name, b.Name) })
	for _, nc := range c.NodeClaims {
		if n := ix.NodeOf(nc); n != nil {
			c.NodeOf[nc.Name] = n
		}
	}
}

// NodePoolOf returns nc's NodePool, nil for a standalone NodeClaim or a NodePool that is gone.
func (c *Cluster) NodePoolOf(nc *karpv1.NodeClaim) *karpv1.NodePool {
	return c.NodePools[nc.Labels[karpv1.NodePoolLabelKey]]
}

// isDeleting reports whether nc or its node is going away or already chosen for disruption.
func (c *Cluster) isDeleting(nc *karpv1.NodeClaim) bool {
	if nc.DeletionTimestamp != nil || isMarked(nc) {
		return true
	}
	n := c.NodeOf[nc.Name]
	return n != nil && n.DeletionTimestamp != nil
}

// isReady reports whether nc has a Node whose Ready condition is True.
func (c *Cluster) isReady(nc *karpv1.NodeClaim) bool {
	n := c.NodeOf[nc.Name]
	if n == nil {
		return false
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// isInitialized reports whether nc's node is initialized.
func isInitialized(nc *karpv1.NodeClaim) bool {
	return meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized)
}
