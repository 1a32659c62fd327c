package solver

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/internal/testcatalog"
	"github.com/joinery-dev/joinery/internal/testpods"
)

// sharingWorkload is a random cluster and batch whose equivalence classes share spread and
// affinity constraints: registered nodes over three zones holding pods (some with required
// anti-affinity, some counted by the batch's spreads), and pending pods of many sizes whose
// spreads vary the policy, maxSkew, minDomains, inclusion policies and matchLabelKeys, with
// required and preferred (anti-)affinity among them.
func sharingWorkload(seed uint64) (*StaticState, []*corev1.Pod) {
	rng := rand.New(rand.NewPCG(seed, 11))
	pick := func(values ...string) string { return values[rng.IntN(len(values))] }
	zones := []string{"zone-1", "zone-2", "zone-3"}
	state := &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default")}}
	podOf := func(name string, opts ...podOption) *corev1.Pod {
		return testPod(name, pick("100m", "250m", "500m", "1"), pick("128Mi", "512Mi", "1Gi"), opts...)
	}
	spread := func(key string) podOption {
		sel := &metav1.LabelSelector{MatchLabels: map[string]string{"group": pick("a", "b", "c")}}
		c := corev1.TopologySpreadConstraint{MaxSkew: int32(1 + rng.IntN(2)), TopologyKey: key, LabelSelector: sel,
			WhenUnsatisfiable: corev1.UnsatisfiableConstraintAction(pick(string(corev1.DoNotSchedule), string(corev1.DoNotSchedule), string(corev1.ScheduleAnyway)))}
		if key == corev1.LabelTopologyZone && rng.IntN(3) == 0 {
			c.MinDomains = new(int32(3))
		}
		if rng.IntN(4) == 0 {
			c.NodeTaintsPolicy = new(corev1.NodeInclusionPolicyHonor)
		}
		if rng.IntN(4) == 0 {
			c.MatchLabelKeys = []string{"version"}
		}
		return func(p *corev1.Pod) { p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, c) }
	}
	kinds := []func(string) *corev1.Pod{
		func(n string) *corev1.Pod { return podOf(n, labelled("group", pick("a", "b", "c"))) },
		func(n string) *corev1.Pod {
			return podOf(n, labelled("group", pick("a", "b", "c")), labelled("version", pick("v1", "v2")), spread(corev1.LabelTopologyZone))
		},
		func(n string) *corev1.Pod {
			return podOf(n, labelled("group", pick("a", "b", "c")), spread(corev1.LabelHostname), spread(corev1.LabelTopologyZone))
		},
		func(n string) *corev1.Pod {
			return podOf(n, labelled("app", pick("db", "cache")), affine(pick(corev1.LabelTopologyZone, corev1.LabelHostname), pick("db", "cache")))
		},
		func(n string) *corev1.Pod {
			return podOf(n, labelled("app", "nginx"), testpods.AntiAffine(corev1.LabelHostname, "nginx"))
		},
		func(n string) *corev1.Pod {
			return podOf(n, labelled("group", "a"), testpods.PreferAntiAffine(10, corev1.LabelTopologyZone, "nginx"), preferAffine(5, corev1.LabelHostname, "db"))
		},
	}
	for i := range 6 {
		node := registeredNode(fmt.Sprintf("node-%d", i), "16")
		node.Labels[corev1.LabelTopologyZone] = zones[i%len(zones)]
		node.Labels[corev1.LabelInstanceTypeStable] = "bench-16"
		node.Status.Allocatable[corev1.ResourceMemory] = resource.MustParse("32Gi")
		state.NodeList = append(state.NodeList, node)
		for j := range 1 + rng.IntN(4) {
			p := kinds[rng.IntN(len(kinds))](fmt.Sprintf("bound-%d-%d", i, j))
			p.Spec.NodeName = node.Name
			state.PodList = append(state.PodList, p)
		}
	}
	var batch []*corev1.Pod
	for i := range 80 + rng.IntN(40) {
		batch = append(batch, kinds[rng.IntN(len(kinds))](fmt.Sprintf("pending-%d", i)))
	}
	return state, batch
}

// Sharing PreFilter states between classes is an optimisation only: on random workloads the
// plans are the same as when every class computes its own state.
func TestSharedPreFilterPlansAsIsolated(t *testing.T) {
	isolated := func(o *Options) { o.Framework.IsolatedPreFilter = true }
	for seed := range uint64(6) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			state, batch := sharingWorkload(seed)
			shared, err := newTestSolver(t, state, testcatalog.Bench()).Plan(t.Context(), batch)
			if err != nil {
				t.Fatal(err)
			}
			alone, err := newTestSolver(t, state, testcatalog.Bench(), isolated).Plan(t.Context(), batch)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := planSummary(shared), planSummary(alone); got != want {
				t.Fatalf("plans differ with shared PreFilter states:\n%s\nwith each class's own:\n%s", got, want)
			}
			if len(shared.NewNodeClaims) == 0 {
				t.Fatal("the workload opened no NodeClaim; it tests nothing")
			}
		})
	}
}

// On Karpenter's benchmark workload (diversePods), whose thousands of classes share a few
// dozen spread and affinity constraints, the plan is the same as with each class's own
// PreFilter state.
func TestSharedPreFilterPlansAsIsolatedDiverse(t *testing.T) {
	isolated := func(o *Options) { o.Framework.IsolatedPreFilter = true }
	state := &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default")}}
	batch := diversePods(600)
	shared, err := newTestSolver(t, state, testcatalog.Bench()).Plan(t.Context(), batch)
	if err != nil {
		t.Fatal(err)
	}
	alone, err := newTestSolver(t, state, testcatalog.Bench(), isolated).Plan(t.Context(), batch)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := planSummary(shared), planSummary(alone); got != want {
		t.Fatalf("plans differ with shared PreFilter states:\n%s\nwith each class's own:\n%s", got, want)
	}
}
