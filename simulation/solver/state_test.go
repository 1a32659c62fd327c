package solver

import (
	"context"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/simulation"
)

// recordedState is an OfferingState: every offering of the instance types in gone is
// recorded unavailable.
type recordedState struct {
	*StaticState
	gone map[string]bool
}

func (s recordedState) OfferingUnavailable(_, instanceType, _ string) bool {
	return s.gone[instanceType]
}

// TestPlansTakeTheirOwnCluster: one solver plans concurrently over two clusters, each call
// with its own state, and each answer is its own cluster's: no call sees the other's nodes,
// NodePools or recorded offerings.
func TestPlansTakeTheirOwnCluster(t *testing.T) {
	its := kwokTypes(t)
	withNode := &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("a")}, NodeList: []*corev1.Node{registeredNode("n-a", "4")}}
	empty := &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("b")}}
	gone := map[string]bool{}
	for _, it := range its {
		gone[it.Name] = true
	}
	exhausted := recordedState{StaticState: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("c")}}, gone: gone}
	s := newTestSolver(t, nil, its).Solver
	check := map[string]struct {
		state ClusterState
		want  func(*simulation.Plan) bool
	}{
		"registered node": {withNode, func(p *simulation.Plan) bool {
			return p.InFlight["uid-web"] == "n-a" && len(p.NewNodeClaims) == 0
		}},
		"new NodeClaim of its NodePool": {empty, func(p *simulation.Plan) bool {
			return len(p.NewNodeClaims) == 1 && p.NewNodeClaims[0].NodeClaim.Labels[karpv1.NodePoolLabelKey] == "b"
		}},
		"its own record of unavailable offerings": {exhausted, func(p *simulation.Plan) bool {
			return len(p.NewNodeClaims) == 0 && p.HasReason("uid-web", simulation.ReasonUnavailableOfferings)
		}},
	}
	var wg sync.WaitGroup
	for name, c := range check {
		wg.Go(func() {
			for range 5 {
				plan, err := s.PlanDisruption(context.Background(), c.state, []*corev1.Pod{testPod("web", "1", "1Gi")})
				if err != nil {
					t.Errorf("%s: %v", name, err)
					return
				}
				if !c.want(plan) {
					t.Errorf("%s: plan in flight %v, %d new NodeClaims, unschedulable %v", name, plan.InFlight, len(plan.NewNodeClaims), plan.Unschedulable)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestReasons: each NodePool's reason comes with its kind, and Unschedulable is their texts
// joined as the user has always read them.
func TestReasons(t *testing.T) {
	its := kwokTypes(t)
	gone := map[string]bool{}
	for _, it := range its {
		gone[it.Name] = true
	}
	pools := func(nps ...*karpv1.NodePool) *StaticState { return &StaticState{NodePoolList: nps} }
	type want struct {
		pool string
		kind simulation.ReasonKind
		text string // a substring of the reason's Text
	}
	tests := []struct {
		name  string
		state ClusterState
		pod   *corev1.Pod
		want  []want
		// text is the whole Unschedulable text, when pinned.
		text string
	}{
		{name: "limits", state: pools(nodePool("default", limited(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}))),
			pod:  testPod("web", "2", "1Gi"),
			want: []want{{"default", simulation.ReasonLimits, `nodepool "default": limits reached`}},
			text: `no NodePool fits: nodepool "default": limits reached`},
		{name: "taint", state: pools(nodePool("gpu", tainted("gpu")), nodePool("default", limited(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}))),
			pod: testPod("web", "2", "1Gi"),
			want: []want{ // NodePools of equal weight by name
				{"default", simulation.ReasonLimits, `nodepool "default": limits reached`},
				{"gpu", simulation.ReasonRequirements, `nodepool "gpu": taint gpu:NoSchedule not tolerated`},
			},
			text: `no NodePool fits: nodepool "default": limits reached; nodepool "gpu": taint gpu:NoSchedule not tolerated`},
		{name: "requirements", state: pools(nodePool("default")),
			pod:  testPod("web", "1", "1Gi", requireNode(corev1.LabelOSStable, "windows")),
			want: []want{{"default", simulation.ReasonRequirements, `nodepool "default": incompatible requirements`}}},
		{name: "too large", state: pools(nodePool("default")),
			pod:  testPod("web", "1000", "1Gi"),
			want: []want{{"default", simulation.ReasonNoInstanceType, `nodepool "default": no instance type fits the pod's requests`}}},
		{name: "static and not ready", state: pools(nodePool("fixed", static(2)), nodePool("waiting", notReady)),
			pod: testPod("web", "1", "1Gi"),
			want: []want{
				{"fixed", simulation.ReasonStatic, `nodepool "fixed" is static (spec.replicas)`},
				{"waiting", simulation.ReasonNotReady, `nodepool "waiting" is not ready (NodeClassNotReady)`},
			},
			text: `no NodePool fits: nodepool "fixed" is static (spec.replicas); nodepool "waiting" is not ready (NodeClassNotReady)`},
		{name: "no NodePool", state: pools(),
			pod:  testPod("web", "1", "1Gi"),
			want: []want{{"", simulation.ReasonNotReady, "no NodePool is ready"}},
			text: "no NodePool fits: no NodePool is ready"},
		{name: "unavailable offerings", state: recordedState{StaticState: pools(nodePool("default")), gone: gone},
			pod:  testPod("web", "1", "1Gi"),
			want: []want{{"default", simulation.ReasonUnavailableOfferings, `nodepool "default": no instance type meets the requirements`}}},
	}
	s := newTestSolver(t, nil, its).Solver
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := s.Plan(t.Context(), tt.state, []*corev1.Pod{tt.pod})
			if err != nil {
				t.Fatal(err)
			}
			got := plan.Reasons[tt.pod.UID]
			if len(got) != len(tt.want) {
				t.Fatalf("reasons %+v, want %d", got, len(tt.want))
			}
			texts := make([]string, len(got))
			for i, w := range tt.want {
				if got[i].NodePool != w.pool || got[i].Kind != w.kind || !strings.Contains(got[i].Text, w.text) || !strings.HasSuffix(got[i].Text, got[i].Message) {
					t.Errorf("reason %d: %+v, want nodepool %q, kind %s, text with %q", i, got[i], w.pool, w.kind, w.text)
				}
				texts[i] = got[i].Text
			}
			if want := "no NodePool fits: " + strings.Join(texts, "; "); plan.Unschedulable[tt.pod.UID] != want {
				t.Errorf("unschedulable %q, want the reasons joined: %q", plan.Unschedulable[tt.pod.UID], want)
			}
			if tt.text != "" && plan.Unschedulable[tt.pod.UID] != tt.text {
				t.Errorf("unschedulable %q, want %q", plan.Unschedulable[tt.pod.UID], tt.text)
			}
		})
	}
}
