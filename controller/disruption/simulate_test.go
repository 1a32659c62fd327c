package disruption

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/kwok/catalog"
)

type staticUnavailable map[cloudprovider.OfferingKey]time.Time

func (s staticUnavailable) Unavailable(context.Context) (map[cloudprovider.OfferingKey]time.Time, error) {
	return s, nil
}

func replacementTypes(nc *karpv1.NodeClaim) []string {
	for _, r := range nc.Spec.Requirements {
		if r.Key == corev1.LabelInstanceTypeStable {
			return r.Values
		}
	}
	return nil
}

// TestSolverSimulator runs the real solver: pods that fit nowhere else get a replacement, a
// pod no instance type holds refuses the command, and offerings recorded unavailable are left
// out of replacements.
func TestSolverSimulator(t *testing.T) {
	f, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	its, err := f.Build(catalog.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	huge := testPod("huge", "node-a")
	huge.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1000")
	cluster, _ := loadCluster(t, objects(testNodePool("default"), pair(testNode("a", "default", drifted)), testPod("web", "node-a"))...)
	cands, _ := cluster.Candidates(karpv1.DisruptionReasonDrifted, ClassEventual)
	if len(cands) != 1 {
		t.Fatalf("candidates = %d", len(cands))
	}

	sim := benchSimulator(t)
	result, err := sim.Simulate(context.Background(), cluster, cands)
	if err != nil {
		t.Fatal(err)
	}
	if why := result.Refusal(cluster, cands); why != nil || len(result.Replacements) != 1 {
		t.Fatalf("refusal %q, %d replacements; want one replacement", why, len(result.Replacements))
	}
	if got := result.Destinations["pod-web"]; got != "replacement-0" {
		t.Errorf("web goes to %q, want replacement-0", got)
	}
	first := replacementTypes(result.Replacements[0])[0]

	// Every offering of the cheapest type recorded unavailable: the next replacement lists
	// other types only.
	gone := staticUnavailable{}
	for _, it := range its {
		if it.Name == first {
			for _, o := range it.Offerings {
				gone[cloudprovider.OfferingKey{CapacityType: o.CapacityType(), InstanceType: it.Name, Zone: o.Zone()}] = time.Now().Add(time.Hour)
			}
		}
	}
	sim.offerings = gone
	result, err = sim.Simulate(context.Background(), cluster, cands)
	if err != nil {
		t.Fatal(err)
	}
	if len(result.Replacements) != 1 || slices.Contains(replacementTypes(result.Replacements[0]), first) {
		t.Errorf("replacement types %v still list %s, whose offerings are all unavailable", replacementTypes(result.Replacements[0]), first)
	}

	cluster, _ = loadCluster(t, objects(testNodePool("default"), pair(testNode("a", "default", drifted)), huge)...)
	cands, _ = cluster.Candidates(karpv1.DisruptionReasonDrifted, ClassEventual)
	result, err = sim.Simulate(context.Background(), cluster, cands)
	if err != nil {
		t.Fatal(err)
	}
	if why := refusalOf(result.Refusal(cluster, cands)); why == nil || !strings.HasPrefix(why.Message, "pod default/huge would not schedule: no NodePool fits") {
		t.Errorf("refusal = %v", why)
	}
}

// TestSolverSimulatorNodeGoingAway: a pre-plan may simulate a NodeClaim that is already being
// deleted, whose node the loaded cluster leaves out; its pods still find the room elsewhere.
func TestSolverSimulatorNodeGoingAway(t *testing.T) {
	its := testCatalog(t, 0)
	cluster, _ := loadCluster(t, objects(testNodePool("default"),
		pair(testNode("a", "default", typed(its, "large", "on-demand"), func(nc *karpv1.NodeClaim, _ *corev1.Node) {
			now := metav1.NewTime(epoch)
			nc.DeletionTimestamp, nc.Finalizers = &now, []string{"test"}
		})),
		pair(testNode("b", "default", typed(its, "large", "on-demand"))), testPod("web", "node-a"))...)
	nc := cluster.NodeClaims[slices.IndexFunc(cluster.NodeClaims, func(nc *karpv1.NodeClaim) bool { return nc.Name == "a" })]
	cand := &Candidate{NodeClaim: nc, Node: cluster.NodeOf["a"], NodePool: cluster.NodePools["default"], Pods: cluster.PodsByNode["node-a"]}
	sim := newSolverSimulator(t, its)
	for range 2 { // the second forks the loaded cluster
		result, err := sim.Simulate(context.Background(), cluster, []*Candidate{cand})
		if err != nil {
			t.Fatal(err)
		}
		if got := result.Destinations["pod-web"]; got != "b" || len(result.Replacements) != 0 {
			t.Fatalf("web → %q with %d replacements, want b and none", got, len(result.Replacements))
		}
	}
}

// TestConcurrentSimulations: simulations of two different clusters through one simulator run
// at once, each on its own View, and each answers for its own cluster as it does alone: the
// pod of the cluster with room moves to the other node, the one of the cluster without
// room gets a replacement.
func TestConcurrentSimulations(t *testing.T) {
	its := testCatalog(t, 0)
	candidate := func(nodes ...string) (*Cluster, []*Candidate) {
		objs := []any{testNodePool("default"), testPod("web", "node-a")}
		for _, n := range nodes {
			objs = append(objs, pair(testNode(n, "default", typed(its, "large", "on-demand"))))
		}
		cluster, _ := loadCluster(t, objects(objs...)...)
		nc := cluster.NodeClaims[slices.IndexFunc(cluster.NodeClaims, func(nc *karpv1.NodeClaim) bool { return nc.Name == "a" })]
		return cluster, []*Candidate{{NodeClaim: nc, Node: cluster.NodeOf["a"], NodePool: cluster.NodePools["default"], Pods: cluster.PodsByNode["node-a"]}}
	}
	withRoom, withRoomCands := candidate("a", "b")
	alone, aloneCands := candidate("a")
	sim := newSolverSimulator(t, its)
	cases := []struct {
		name    string
		cluster *Cluster
		cands   []*Candidate
		to      string
	}{
		{"room on node b", withRoom, withRoomCands, "b"},
		{"no room", alone, aloneCands, "replacement-0"},
	}
	var wg sync.WaitGroup
	for _, c := range cases {
		wg.Go(func() {
			for range 4 {
				result, err := sim.Simulate(context.Background(), c.cluster, c.cands)
				if err != nil {
					t.Errorf("%s: %v", c.name, err)
					return
				}
				if got := result.Destinations["pod-web"]; got != c.to {
					t.Errorf("%s: web → %q with %d replacements, want %s", c.name, got, len(result.Replacements), c.to)
					return
				}
			}
		})
	}
	wg.Wait()
}
