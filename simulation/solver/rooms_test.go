package solver

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/internal/testcatalog"
	"github.com/joinery-dev/joinery/simulation"
)

// The room index finds, from any claim on, the same next claim with room as a scan of every
// claim, while rooms are set, shrink and claims are added.
func TestRoomsNextAsScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var t2 rooms
	var all []room
	randomRoom := func() room {
		return room{rng.Int64N(4000) - 500, rng.Int64N(8 << 30), rng.Int64N(20) - 2}
	}
	for step := range 3000 {
		switch {
		case len(all) == 0 || rng.IntN(3) == 0: // a claim is added
			all = append(all, randomRoom())
			t2.set(len(all)-1, all[len(all)-1])
		default: // a claim's room shrinks
			i := rng.IntN(len(all))
			all[i] = room{all[i].milliCPU - rng.Int64N(500), all[i].memory - rng.Int64N(1<<30), all[i].pods - 1}
			t2.set(i, all[i])
		}
		need := room{rng.Int64N(2000), rng.Int64N(4 << 30), 1}
		from := rng.IntN(len(all) + 1)
		want := -1
		for i := from; i < len(all); i++ {
			if all[i].holds(need) {
				want = i
				break
			}
		}
		if got := t2.next(from, need); got != want {
			t.Fatalf("step %d: next(%d, %v) = %d, a scan finds %d", step, from, need, got, want)
		}
	}
}

// The room index and the affinity rejections shared between classes only skip claims the
// Filters or admits would reject: plans are the same as when every claim is tried.
func TestClaimSkippingPlansAsExhaustive(t *testing.T) {
	type workload struct {
		name  string
		state *StaticState
		batch []*corev1.Pod
	}
	var workloads []workload
	for seed := range uint64(4) {
		state, batch := sharingWorkload(seed)
		workloads = append(workloads, workload{fmt.Sprintf("sharing-%d", seed), state, batch})
	}
	workloads = append(workloads,
		workload{"diverse", &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default")}}, diversePods(600)},
		workload{"provisioning", &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default")}}, benchPods(300)})
	for _, w := range workloads {
		t.Run(w.name, func(t *testing.T) {
			indexed, err := newTestSolver(t, w.state, testcatalog.Bench(), withPolicy(PreferenceRespect)).Plan(t.Context(), w.batch)
			if err != nil {
				t.Fatal(err)
			}
			s := newTestSolver(t, w.state, testcatalog.Bench(), withPolicy(PreferenceRespect))
			s.exhaustive = true
			every, err := s.Plan(t.Context(), w.batch)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := planSummary(indexed), planSummary(every); got != want {
				t.Fatalf("plans differ when claims are skipped:\n%s\nwhen every claim is tried:\n%s", got, want)
			}
			if len(indexed.NewNodeClaims) == 0 {
				t.Fatal("the workload opened no NodeClaim; it tests nothing")
			}
		})
	}
}

// A claim rejected for a pod's required pod affinity is skipped by the pods of the same rule
// only until a pod lands in its domain: b-small, of another class than b-large but the same
// rule, goes where a-partner landed after b-large found no partner there.
func TestAffinityRejectionLapsesWhenPartnerLands(t *testing.T) {
	state := &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default")}}
	batch := []*corev1.Pod{
		testPod("first", "3", "1Gi", labelled("role", "first")),
		testPod("b-large", "2", "1Gi", labelled("app", "b"), affine(corev1.LabelHostname, "a")),
		testPod("a-partner", "1", "1Gi", labelled("app", "a")),
		testPod("b-small", "500m", "1Gi", labelled("app", "b"), affine(corev1.LabelHostname, "a")),
	}
	plan, err := newTestSolver(t, state, testcatalog.Bench()).Plan(t.Context(), batch)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Unschedulable) > 0 {
		t.Fatalf("unschedulable: %v", plan.Unschedulable)
	}
	claimOf := map[string]*simulation.PlannedNodeClaim{}
	for _, nc := range plan.NewNodeClaims {
		for _, pod := range nc.Pods {
			claimOf[pod.Name] = nc
		}
	}
	for _, name := range []string{"b-large", "b-small"} {
		if claimOf[name] == nil || claimOf[name] != claimOf["a-partner"] {
			t.Fatalf("%s is not on a-partner's NodeClaim: %s", name, planSummary(plan))
		}
	}
}
