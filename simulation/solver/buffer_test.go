package solver

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	autoscalingv1alpha1 "github.com/joinery-dev/joinery/apis/autoscaling/v1alpha1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/simulation/buffer"
)

// virtualPods is n virtual pods of a buffer in namespace ns, each requesting cpu.
func virtualPods(n int32, ns, cpu string) []*corev1.Pod {
	b := &autoscalingv1alpha1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Name: "buf", Namespace: ns, UID: "buffer-uid"}}
	template := testPod("chunk", cpu, "256Mi")
	return buffer.VirtualPods(b, &corev1.PodTemplateSpec{Spec: template.Spec}, n)
}

// TestPlanWithVirtual: virtual pods go to registered, initialized nodes first (reported as
// existing capacity), then to nodes still initializing and new NodeClaims (not existing
// capacity); pending pods are planned before them and take capacity first.
func TestPlanWithVirtual(t *testing.T) {
	initialized := func(name, node string, done bool) *karpv1.NodeClaim {
		status := metav1.ConditionFalse
		if done {
			status = metav1.ConditionTrue
		}
		return &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}},
			Status: karpv1.NodeClaimStatus{NodeName: node, Conditions: []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: status}}}}
	}
	tests := []struct {
		name         string
		pool         *karpv1.NodePool
		nodes        []*corev1.Node
		claims       []*karpv1.NodeClaim
		pending      []*corev1.Pod
		virtual      []*corev1.Pod
		wantExisting int
		wantClaims   int
		// wantLimited: virtual pods unschedulable because of NodePool limits.
		wantLimited int
	}{
		{name: "all fit a registered node", pool: nodePool("default"), nodes: []*corev1.Node{registeredNode("roomy", "8")},
			claims: []*karpv1.NodeClaim{initialized("claim-roomy", "roomy", true)}, virtual: virtualPods(3, "team", "1"), wantExisting: 3},
		{name: "a node no NodeClaim owns is existing capacity", pool: nodePool("default"), nodes: []*corev1.Node{registeredNode("static", "8")},
			virtual: virtualPods(2, "team", "1"), wantExisting: 2},
		{name: "the rest on a new NodeClaim", pool: nodePool("default"), nodes: []*corev1.Node{registeredNode("small", "2500m")},
			virtual: virtualPods(4, "team", "1"), wantExisting: 2, wantClaims: 1},
		{name: "an initializing node is not existing capacity", pool: nodePool("default"), nodes: []*corev1.Node{registeredNode("booting", "8")},
			claims: []*karpv1.NodeClaim{initialized("claim-booting", "booting", false)}, virtual: virtualPods(2, "team", "1")},
		{name: "no nodes: new capacity", pool: nodePool("default"), virtual: virtualPods(2, "team", "1"), wantClaims: 1},
		{name: "pending pods take capacity first", pool: nodePool("default", limited(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")})),
			pending: pods(1, "web", "1200m", "256Mi"), virtual: virtualPods(1, "a-team", "1200m"), wantClaims: 1, wantLimited: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := &StaticState{NodePoolList: []*karpv1.NodePool{tt.pool}, NodeList: tt.nodes, NodeClaimList: tt.claims, PodList: tt.pending}
			s := newTestSolver(t, state, kwokTypes(t))
			plan, existing, err := s.PlanWithVirtual(context.Background(), tt.pending, tt.virtual)
			if err != nil {
				t.Fatal(err)
			}
			wantClaims(t, plan, tt.wantClaims)
			if existing.Len() != tt.wantExisting {
				t.Errorf("%d virtual pods on existing capacity, want %d (in flight %v)", existing.Len(), tt.wantExisting, plan.InFlight)
			}
			limited := 0
			for _, p := range tt.virtual {
				if why, ok := plan.Unschedulable[p.UID]; ok {
					if !strings.Contains(why, "limits reached") {
						t.Errorf("virtual pod %s unschedulable: %s", p.Name, why)
					}
					limited++
				}
			}
			if limited != tt.wantLimited {
				t.Errorf("%d virtual pods stopped by limits, want %d: %v", limited, tt.wantLimited, plan.Unschedulable)
			}
			for _, p := range tt.pending {
				if why, ok := plan.Unschedulable[p.UID]; ok {
					t.Errorf("pending pod %s unschedulable: %s", p.Name, why)
				}
			}
		})
	}
}
