package disruption

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/kwok/catalog"
)

// TestRefusalUnsettledDestination: a command whose simulation puts a pod on a NodeClaim that
// has no Node yet, or whose Node is not initialized, is refused (Karpenter: "would schedule
// against uninitialized nodeclaim"), by drift and consolidation alike, and the blocked node is
// told which NodeClaim it waits for.
func TestRefusalUnsettledDestination(t *testing.T) {
	its := testCatalog(t, 0)
	launching := func(nc *karpv1.NodeClaim, n *corev1.Node) {
		notInitialized(nc, n)
		nc.Status.NodeName, nc.Status.ProviderID = "", ""
	}
	tests := []struct {
		name string
		dest []ncOption
		// withNode: the destination has a Node object
		withNode bool
		want     string
	}{
		{name: "launching, no Node yet", dest: []ncOption{launching}, want: "would schedule against uninitialized nodeclaim dest"},
		{name: "registered, not initialized", dest: []ncOption{notInitialized}, withNode: true, want: "would schedule against uninitialized nodeclaim dest"},
		// A command chosen with an earlier one done waits for its replacement instead of
		// being dropped at its validation (Refusal.Budget).
		{name: "another command's replacement, launching", dest: []ncOption{launching, func(nc *karpv1.NodeClaim, _ *corev1.Node) {
			nc.Annotations = map[string]string{ReplacementForAnnotationKey: "single-node-consolidation-x"}
		}}, want: "waits for nodeclaim dest, another command's replacement, to initialize"},
	}
	for _, tt := range tests {
		for _, method := range []string{"drift", "single", "multi"} {
			t.Run(tt.name+"/"+method, func(t *testing.T) {
				objs := []client.Object{testNodePool("default", onDemandOnly, allBudget)}
				for _, n := range []string{"a", "b"} {
					objs = append(objs, pair(testNode(n, "default", typed(its, "medium", "on-demand"), drifted))...)
					objs = append(objs, cpuPod("web-"+n, "node-"+n, "3")) // no room for the other's
				}
				nc, node := testNode("dest", "default", append([]ncOption{typed(its, "large", "on-demand")}, tt.dest...)...)
				objs = append(objs, nc)
				if tt.withNode {
					objs = append(objs, node)
				}
				cluster, _ := loadCluster(t, objs...)
				base := Consolidation{Simulator: newSolverSimulator(t, its), InstanceTypes: benchTypes(its)}
				var m Method
				switch method {
				case "drift":
					m = &Drift{Simulator: base.Simulator}
				case "single":
					m = &SingleNodeConsolidation{Consolidation: base}
				case "multi":
					m = &MultiNodeConsolidation{Consolidation: base}
				}
				cmd, res, err := computeMethod(context.Background(), cluster, m, epoch)
				if err != nil {
					t.Fatal(err)
				}
				if cmd != nil {
					t.Fatalf("command %s (destinations %v), want none: its pods would land on a nodeclaim that is not initialized", cmd, cmd.Destinations)
				}
				if method == "multi" {
					return // single-node consolidation reports the nodes
				}
				want := tt.want
				found := false
				for _, b := range res.Blocked {
					found = found || strings.Contains(b.Message, want)
				}
				if !found {
					t.Errorf("blocked %+v, want one saying %q", res.Blocked, want)
				}
			})
		}
	}
}

// TestEmptyBudgetProtectsEmptyNodes: empty nodes are Emptiness's; a budget of zero for reason
// Empty keeps them, and consolidation (reason Underutilized) does not delete them instead.
func TestEmptyBudgetProtectsEmptyNodes(t *testing.T) {
	its := testCatalog(t, 0)
	np := testNodePool("default", onDemandOnly, budgets(
		karpv1.Budget{Nodes: "0", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonEmpty}},
		karpv1.Budget{Nodes: "100%"}))
	objs := []client.Object{np}
	for _, n := range []string{"a", "b", "c"} {
		objs = append(objs, pair(testNode(n, "default", typed(its, "large", "on-demand")))...)
	}
	cluster, _ := loadCluster(t, objs...)
	base := Consolidation{Simulator: newSolverSimulator(t, its), InstanceTypes: benchTypes(its)}
	for _, m := range []Method{&Emptiness{}, &MultiNodeConsolidation{Consolidation: base}, &SingleNodeConsolidation{Consolidation: base}} {
		cmd, _, err := computeMethod(context.Background(), cluster, m, epoch)
		if err != nil {
			t.Fatal(err)
		}
		if cmd != nil {
			t.Errorf("%s: command %s (reason %s), want none: the Empty budget is 0", m.Name(), cmd, cmd.Reason)
		}
	}
}

// spotCatalog: "big" (16 cpu) and "unit" (4 cpu), priced so that one big is cheaper than
// three units, with on-demand and spot offerings; every type at half its price on spot.
func unitCatalog(t testing.TB) cloudprovider.InstanceTypes {
	t.Helper()
	f := &catalog.File{}
	for _, it := range []struct {
		name  string
		cpu   int64
		price float64
	}{{"unit", 4, 0.2}, {"big", 16, 0.5}} {
		f.InstanceTypes = append(f.InstanceTypes, catalog.InstanceType{Name: it.name, Arch: "amd64", OperatingSystems: []string{"linux"},
			CPU: it.cpu, MemoryMiB: it.cpu * 4096, Pods: 58, Offerings: []catalog.Offering{
				{Zone: "test-zone-a", CapacityType: karpv1.CapacityTypeOnDemand, Price: it.price},
			}})
	}
	its, err := f.Build(catalog.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return its
}

// teamPool is a NodePool whose nodes carry example.com/team=<team>, so pods of one team can
// never share a node with the other's.
func teamPool(team string) *karpv1.NodePool {
	np := testNodePool(team, onDemandOnly, allBudget)
	np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, karpv1.NodeSelectorRequirementWithMinValues{
		Key: "example.com/team", Operator: corev1.NodeSelectorOpIn, Values: []string{team}})
	return np
}

// TestMultiNodeConsolidationPerNodePool: two NodePools with disjoint requirements, ten
// underused nodes each, interleaved in disruption order. Every prefix of the global order mixes
// both pools and would need two replacements, so Karpenter's single global prefix search finds
// nothing; searching each NodePool's own prefix replaces several nodes with one.
func TestMultiNodeConsolidationPerNodePool(t *testing.T) {
	its := unitCatalog(t)
	objs := []client.Object{teamPool("a"), teamPool("b")}
	for i := range 10 {
		for _, team := range []string{"a", "b"} {
			name := fmt.Sprintf("%s%02d", team, i)
			objs = append(objs, pair(testNode(name, team, typed(its, "unit", "on-demand"), func(nc *karpv1.NodeClaim, n *corev1.Node) {
				n.Labels["example.com/team"], nc.Labels["example.com/team"] = team, team
			}))...)
			p := cpuPod("web-"+name, "node-"+name, "3")
			p.Spec.NodeSelector = map[string]string{"example.com/team": team}
			// i pods of deletion cost interleave the two pools in disruption order.
			p.Annotations = map[string]string{PodDeletionCostAnnotationKey: fmt.Sprint(i * 1000)}
			objs = append(objs, p)
		}
	}
	cluster, _ := loadCluster(t, objs...)
	m := &MultiNodeConsolidation{Consolidation{Simulator: newSolverSimulator(t, its), InstanceTypes: benchTypes(its)}}
	cands, _ := cluster.Candidates(m.Reason(), m.Class())
	allowed, _ := cluster.Allowed(m.Reason(), epoch)
	cmd, _, err := m.ComputeCommand(context.Background(), cluster, allowed, cands)
	if err != nil {
		t.Fatal(err)
	}
	if cmd == nil {
		t.Fatal("no command; want several nodes of one NodePool replaced by one big node")
	}
	pools := map[string]bool{}
	for _, c := range cmd.Candidates {
		pools[c.NodePool.Name] = true
	}
	if len(cmd.Candidates) < 3 || len(pools) != 1 || cmd.Decision() != DecisionReplace || len(cmd.Replacements) != 1 {
		t.Fatalf("command %s over pools %v, want at least 3 nodes of one pool replaced by one", cmd, pools)
	}
	verifyCommand(t, cluster, cmd, its)

	// Karpenter's strategy on the same input: one prefix of the global order.
	global := m.order(cands, epoch)
	if global[0].NodePool.Name == global[1].NodePool.Name {
		t.Fatalf("disruption order %v does not interleave the pools", names(global))
	}
	best, _, err := m.searchPrefix(context.Background(), cluster, newPriceBook(m.InstanceTypes, cluster), global, epoch.Add(DefaultMultiNodeTimeout))
	if err != nil {
		t.Fatal(err)
	}
	if best != nil {
		t.Errorf("the global prefix search found %s; want nothing (every prefix mixes both pools)", best)
	}
}

// TestWaitingForAnotherCommandsReplacementIsNoFailure: a command whose pods go to a replacement
// another command is still launching (chosen with that command done, and its budget allowing
// both at once) waits, as for a budget, instead of being refused and dropped; a pod going to any
// other NodeClaim that is not initialized is refused.
func TestWaitingForAnotherCommandsReplacementIsNoFailure(t *testing.T) {
	for _, replacement := range []bool{true, false} {
		nc, _ := testNode("dest", "default", notInitialized)
		nc.Status.NodeName = ""
		if replacement {
			nc.Annotations = map[string]string{ReplacementForAnnotationKey: "single-node-consolidation-x"}
		}
		objs := []client.Object{testNodePool("default"), nc}
		objs = append(objs, pair(testNode("a", "default"))...)
		objs = append(objs, testPod("web", "node-a"))
		cluster, _ := loadCluster(t, objs...)
		cands, _ := cluster.Candidates(karpv1.DisruptionReasonUnderutilized, ClassGraceful)
		sim := &Simulation{Destinations: map[types.UID]string{"pod-web": "dest"}}
		refusal := refusalOf(sim.Refusal(cluster, cands))
		if refusal == nil || refusal.Budget != replacement {
			t.Errorf("replacement %v: refusal %+v, want one that waits = %v", replacement, refusal, replacement)
		}
	}
}
