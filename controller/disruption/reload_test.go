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

// withBiggerPods is c with every seventh plain pod replaced by a new object asking for
// 1.5 cpu more, as an informer delivers a changed pod.
func withBiggerPods(c *Cluster) *Cluster {
	out := &Cluster{NodePools: c.NodePools, NodeClaims: c.NodeClaims, Nodes: c.Nodes, NodeOf: c.NodeOf,
		PodsByNode: map[string][]*corev1.Pod{}, PDBs: c.PDBs, DaemonSets: c.DaemonSets}
	plain := 0
	for _, p := range c.Pods {
		if p.Labels["app"] == "plain" {
			if plain++; plain%7 == 0 {
				p = p.DeepCopy()
				p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1750m")
			}
		}
		out.Pods = append(out.Pods, p)
		out.PodsByNode[p.Spec.NodeName] = append(out.PodsByNode[p.Spec.NodeName], p)
	}
	return out
}

// A simulator that loaded the cluster before keeps what it parsed of the pod objects it
// loaded (simulation.Snapshot.Reset); its decisions are those of a simulator that never saw
// the cluster, for the same cluster read again and for one whose pods changed.
func TestConsolidationSameAcrossReloads(t *testing.T) {
	ctx := context.Background()
	its := testcatalog.Bench()
	decideWith := func(sim Simulator, c *Cluster) string {
		base := Consolidation{Simulator: sim, InstanceTypes: benchTypes(its)}
		return describeCommand(decide(ctx, t, c, &MultiNodeConsolidation{Consolidation: base})) + " | " +
			describeCommand(decide(ctx, t, c, &SingleNodeConsolidation{Consolidation: base}))
	}
	c := consolidationCluster(60, its)
	changed := withBiggerPods(c)
	if decideWith(newSolverSimulator(t, its), c) == decideWith(newSolverSimulator(t, its), changed) {
		t.Fatal("the changed pods change no decision: a stale PodInfo would go unnoticed")
	}
	reused := newSolverSimulator(t, its)
	for i, cluster := range []*Cluster{c, c, changed, c} {
		reused.forget() // a new pass: the cluster is loaded again
		if got, want := decideWith(reused, cluster), decideWith(newSolverSimulator(t, its), cluster); got != want {
			t.Errorf("load %d: the simulator that loaded the cluster before decides\n%s\na fresh one\n%s", i, got, want)
		}
	}
}
