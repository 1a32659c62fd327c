package disruption

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joinery-dev/joinery/internal/testcatalog"
)

// describeCommand is a command with where each pod goes.
func describeCommand(cmd *Command) string {
	if cmd == nil {
		return "none"
	}
	out := cmd.String()
	for _, uid := range slices.Sorted(maps.Keys(cmd.Destinations)) {
		out += fmt.Sprintf(" %s→%s", uid, cmd.Destinations[uid])
	}
	return out
}

// withFullNodes is c with the first pod of each of nodes replaced by a new object asking for
// more cpu than any node has, as an informer delivers a changed pod: those nodes take no pod.
func withFullNodes(c *Cluster, nodes map[string]bool) *Cluster {
	out := &Cluster{NodePools: c.NodePools, NodeClaims: c.NodeClaims, Nodes: c.Nodes, NodeOf: c.NodeOf,
		PodsByNode: map[string][]*corev1.Pod{}, PDBs: c.PDBs, DaemonSets: c.DaemonSets}
	for _, p := range c.Pods {
		if nodes[p.Spec.NodeName] && len(out.PodsByNode[p.Spec.NodeName]) == 0 {
			p = p.DeepCopy()
			p.ResourceVersion += "+1" // a new version, as the API server gives a changed pod
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1000")
		}
		out.Pods = append(out.Pods, p)
		out.PodsByNode[p.Spec.NodeName] = append(out.PodsByNode[p.Spec.NodeName], p)
	}
	return out
}

// A simulator that loaded the cluster before keeps what it parsed of the pod versions it
// loaded or was handed as informer events (simulation.PodInfos); its decisions are those of
// a simulator that never saw the cluster, for the same cluster read again (also as deep
// copies) and for one where pods on the nodes the decisions moved pods to changed (new
// versions that fill those nodes): a PodInfo kept for the old versions would still show
// room there.
func TestConsolidationSameAcrossReloads(t *testing.T) {
	ctx := context.Background()
	its := testcatalog.Bench()
	var dests map[string]bool
	decideWith := func(sim Simulator, c *Cluster) string {
		base := Consolidation{Simulator: sim, InstanceTypes: benchTypes(its)}
		multi := decide(ctx, t, c, &MultiNodeConsolidation{Consolidation: base})
		single := decide(ctx, t, c, &SingleNodeConsolidation{Consolidation: base})
		dests = map[string]bool{}
		for _, cmd := range []*Command{multi, single} {
			if cmd == nil {
				continue
			}
			for _, dest := range cmd.Destinations {
				if n := c.NodeOf[dest]; n != nil {
					dest = n.Name
				}
				dests[dest] = true
			}
		}
		return describeCommand(multi) + " | " + describeCommand(single)
	}
	c := consolidationCluster(60, its)
	before := decideWith(newSolverSimulator(t, its), c)
	changed := withFullNodes(c, dests)
	if len(dests) == 0 || decideWith(newSolverSimulator(t, its), changed) == before {
		t.Fatalf("filling the destinations (%v) changes no decision: a stale PodInfo would go unnoticed", dests)
	}
	// reused loads the clusters as given; observed is handed each cluster's pods as informer
	// events and loads a deep copy, as the controller's List returns.
	reused, observed := newSolverSimulator(t, its), newSolverSimulator(t, its)
	events := observed.PodEvents()
	for i, cluster := range []*Cluster{c, c, changed, c, changed} {
		want := decideWith(newSolverSimulator(t, its), cluster)
		reused.forget() // a new pass: the cluster is loaded again
		if got := decideWith(reused, cluster); got != want {
			t.Errorf("load %d: the simulator that loaded the cluster before decides\n%s\na fresh one\n%s", i, got, want)
		}
		for _, p := range cluster.Pods {
			events.OnAdd(p, false)
		}
		observed.forget()
		if got := decideWith(observed, listed(cluster)); got != want {
			t.Errorf("load %d: the simulator fed the pods' events decides on a listed copy\n%s\na fresh one\n%s", i, got, want)
		}
	}
}

// listed is c with every pod a deep copy, as a List from the manager's cache returns it.
func listed(c *Cluster) *Cluster {
	out := &Cluster{NodePools: c.NodePools, NodeClaims: c.NodeClaims, Nodes: c.Nodes, NodeOf: c.NodeOf,
		PodsByNode: map[string][]*corev1.Pod{}, PDBs: c.PDBs, DaemonSets: c.DaemonSets}
	for _, p := range c.Pods {
		p = p.DeepCopy()
		out.Pods = append(out.Pods, p)
		out.PodsByNode[p.Spec.NodeName] = append(out.PodsByNode[p.Spec.NodeName], p)
	}
	return out
}
