package solver

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
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
