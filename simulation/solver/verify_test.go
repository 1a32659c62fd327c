package solver

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/internal/testcatalog"
	"github.com/joinery-dev/joinery/simulation"
)

// TestVerifyPlanRejects makes sure the fidelity check fails plans the Filters would not
// accept: a NodeClaim whose cheapest type is too small, and a pod planned twice.
func TestVerifyPlanRejects(t *testing.T) {
	state := &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default")}}
	batch := pods(2, "web", "3", "1Gi")
	s := newTestSolver(t, state, kwokTypes(t))
	plan, err := s.Plan(t.Context(), batch)
	if err != nil {
		t.Fatal(err)
	}
	profile, _ := simulation.DefaultProfile()
	cases := map[string]struct {
		mutate func(*simulation.Plan)
		want   string
	}{
		"cheapest type too small": {
			mutate: func(p *simulation.Plan) {
				nc := p.NewNodeClaims[0].NodeClaim
				for i := range nc.Spec.Requirements {
					if nc.Spec.Requirements[i].Key == corev1.LabelInstanceTypeStable {
						nc.Spec.Requirements[i].Values = []string{"t3.small"}
					}
				}
			},
			want: "NodeResourcesFit",
		},
		"pod planned twice": {
			mutate: func(p *simulation.Plan) {
				p.NewNodeClaims = append(p.NewNodeClaims, &simulation.PlannedNodeClaim{NodeClaim: p.NewNodeClaims[0].NodeClaim.DeepCopy(), Pods: p.NewNodeClaims[0].Pods[:1]})
			},
			want: "planned twice",
		},
	}
	if err := VerifyPlan(t.Context(), plan, state, kwokTypes(t), profile, nil, batch, simulation.FrameworkOptions{}); err != nil {
		t.Fatalf("unchanged plan: %v", err)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			broken := &simulation.Plan{InFlight: plan.InFlight, Unschedulable: plan.Unschedulable}
			for _, c := range plan.NewNodeClaims {
				broken.NewNodeClaims = append(broken.NewNodeClaims, &simulation.PlannedNodeClaim{NodeClaim: c.NodeClaim.DeepCopy(), Pods: c.Pods})
			}
			tc.mutate(broken)
			err := VerifyPlan(t.Context(), broken, state, kwokTypes(t), profile, nil, batch, simulation.FrameworkOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("VerifyPlan = %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

// TestBenchmarkPlanVerifies runs the fidelity check on the benchmark workload's plan.
func TestBenchmarkPlanVerifies(t *testing.T) {
	its := testcatalog.Bench()
	state := &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default")}}
	batch := benchPods(500)
	s := newTestSolver(t, state, its)
	plan, err := s.Plan(t.Context(), batch)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Unschedulable) > 0 {
		t.Fatalf("unschedulable: %v", first(plan.Unschedulable))
	}
	// The anti-affinity group (100 pods) forces 100 nodes; the requests need far fewer.
	if len(plan.NewNodeClaims) != 100 {
		t.Errorf("nodeclaims %d, want 100", len(plan.NewNodeClaims))
	}
	profile, _ := simulation.DefaultProfile()
	if err := VerifyPlan(t.Context(), plan, state, its, profile, nil, batch, simulation.FrameworkOptions{}); err != nil {
		t.Fatalf("fidelity check: %v", err)
	}
}
