package solver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/internal/testpods"
	"github.com/joinery-dev/joinery/simulation"
)

func registeredNode(name, cpu string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			karpv1.NodePoolLabelKey: "default", corev1.LabelHostname: name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
			corev1.LabelInstanceTypeStable: "m5.2xlarge", corev1.LabelTopologyZone: "test-zone-a",
		}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("58")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
}

// TestPlanDisruption: pods of a node about to go land on registered nodes when the Filters
// allow (InFlight names the node's NodeClaim, or the node), and on new NodeClaims otherwise.
func TestPlanDisruption(t *testing.T) {
	owned := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim-roomy", Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}},
		Status: karpv1.NodeClaimStatus{NodeName: "roomy", Conditions: []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue}}}}
	tests := []struct {
		name       string
		nodes      []*corev1.Node
		claims     []*karpv1.NodeClaim
		batch      []*corev1.Pod
		wantOn     map[string]string // pod UID → InFlight value
		wantClaims int
	}{
		{name: "fits a registered node owned by a NodeClaim", nodes: []*corev1.Node{registeredNode("roomy", "8")}, claims: []*karpv1.NodeClaim{owned},
			batch: pods(2, "web", "1", "1Gi"), wantOn: map[string]string{"uid-web-0": "claim-roomy", "uid-web-1": "claim-roomy"}},
		{name: "fits a node no NodeClaim owns", nodes: []*corev1.Node{registeredNode("static", "8")},
			batch: pods(1, "web", "1", "1Gi"), wantOn: map[string]string{"uid-web-0": "static"}},
		{name: "registered node too small: replacement", nodes: []*corev1.Node{registeredNode("small", "500m")},
			batch: pods(2, "web", "1", "1Gi"), wantClaims: 1},
		{name: "partly: one pod on the node, one on a replacement", nodes: []*corev1.Node{registeredNode("small", "1500m")},
			batch: pods(2, "web", "1", "1Gi"), wantOn: map[string]string{"uid-web-0": "small"}, wantClaims: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default")}, NodeList: tt.nodes, NodeClaimList: tt.claims, PodList: tt.batch}
			s := newTestSolver(t, state, kwokTypes(t))
			plan, err := s.PlanDisruption(context.Background(), tt.batch)
			if err != nil {
				t.Fatal(err)
			}
			wantClaims(t, plan, tt.wantClaims)
			if len(plan.InFlight) != len(tt.wantOn) {
				t.Errorf("in flight = %v, want %v", plan.InFlight, tt.wantOn)
			}
			for uid, where := range tt.wantOn {
				if got := plan.InFlight[types.UID(uid)]; got != where {
					t.Errorf("pod %s on %q, want %q", uid, got, where)
				}
			}
			if len(plan.Unschedulable) != 0 {
				t.Errorf("unschedulable: %v", plan.Unschedulable)
			}
		})
	}
}

// TestPlanDisruptionWithout: plans forked from one loaded cluster, each taking other nodes
// away, equal the plans of a solver that loads each view afresh — spreads, anti-affinity and
// replacements included — and a Plan in between does not disturb them.
func TestPlanDisruptionWithout(t *testing.T) {
	zones := []string{"test-zone-a", "test-zone-b", "test-zone-c"}
	var nodes []*corev1.Node
	var bound []*corev1.Pod
	for i := range 6 {
		n := registeredNode(fmt.Sprintf("n%d", i), "4")
		n.Labels[corev1.LabelTopologyZone] = zones[i%3]
		nodes = append(nodes, n)
		for _, p := range []*corev1.Pod{
			testPod(fmt.Sprintf("anti-%d", i), "1", "1Gi", labelled("app", "anti"), testpods.AntiAffine(corev1.LabelHostname, "anti")),
			testPod(fmt.Sprintf("spread-%d", i), "500m", "1Gi", labelled("app", "spread"), testpods.Spread(corev1.LabelTopologyZone, "spread", corev1.DoNotSchedule)),
			testPod(fmt.Sprintf("plain-%d", i), fmt.Sprintf("%dm", 500+250*i), "1Gi", labelled("app", "plain")),
		} {
			p.Spec.NodeName = n.Name
			p.Status.Phase = corev1.PodRunning
			bound = append(bound, p)
		}
	}
	pool := nodePool("default", requiring(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, nil, zones...))
	// view is the cluster without removed, their pods unbound: what the caller's state shows.
	view := func(removed ...string) (*StaticState, []*corev1.Pod) {
		gone := sets.New(removed...)
		st := &StaticState{NodePoolList: []*karpv1.NodePool{pool}}
		var batch []*corev1.Pod
		for _, n := range nodes {
			if !gone.Has(n.Name) {
				st.NodeList = append(st.NodeList, n)
			}
		}
		for _, p := range bound {
			if gone.Has(p.Spec.NodeName) {
				moved := p.DeepCopy()
				moved.Spec.NodeName = ""
				moved.Status = corev1.PodStatus{Phase: corev1.PodPending}
				batch = append(batch, moved)
				continue
			}
			st.PodList = append(st.PodList, p)
		}
		st.PodList = append(st.PodList, batch...)
		return st, batch
	}
	its := kwokTypes(t)
	forked := newTestSolver(t, nil, its).Solver
	base, _ := view()
	key := new(int)
	for i, removed := range [][]string{{"n0"}, {"n0", "n1"}, {"n3"}, {"n0", "n1", "n2", "n3", "n4"}, {"n5"}, {"n0"}} {
		st, batch := view(removed...)
		got, err := forked.PlanDisruptionWithout(context.Background(), key, base, st, removed, batch)
		if err != nil {
			t.Fatal(err)
		}
		want, err := newTestSolver(t, st, its).PlanDisruption(context.Background(), batch)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := planSummary(got), planSummary(want); g != w {
			t.Errorf("without %v: forked plan\n%s\nwant (fresh)\n%s", removed, g, w)
		}
		if i == 2 {
			// Another plan in between reloads the base on the next call.
			if _, err := forked.Plan(context.Background(), base, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if depth := forked.engine.Snapshot().Depth(); depth != 0 {
		t.Errorf("snapshot left at depth %d", depth)
	}
}

// planSummary describes a plan independently of generated names: where each pod goes, and
// each new NodeClaim's pods and requirements.
func planSummary(p *simulation.Plan) string {
	var lines []string
	for uid, where := range p.InFlight {
		lines = append(lines, fmt.Sprintf("%s → %s", uid, where))
	}
	for uid, why := range p.Unschedulable {
		lines = append(lines, fmt.Sprintf("%s unschedulable: %s", uid, why))
	}
	for _, nc := range p.NewNodeClaims {
		var uids []string
		for _, pod := range nc.Pods {
			uids = append(uids, string(pod.UID))
		}
		slices.Sort(uids)
		lines = append(lines, fmt.Sprintf("new %v %v", uids, nc.NodeClaim.Spec.Requirements))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
