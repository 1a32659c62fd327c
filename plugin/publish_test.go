package plugin

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/joinery-dev/joinery/apis"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/simulation"
)

// TestInFlightPlanOnAnInitializedNodeClaim: a batch plans pods onto a NodeClaim that was
// launching when the planner read it. If the NodeClaim is still launching, the pods are
// recorded on it and wait; if its node initialized meanwhile, the pods cannot wait for it and
// are retried at once (the node may hold them now) rather than left for an unrelated event
// and a later batch that would buy them capacity of their own.
func TestInFlightPlanOnAnInitializedNodeClaim(t *testing.T) {
	cases := []struct {
		name          string
		initialized   bool
		wantActivated []string
		wantWaiting   bool
	}{
		{name: "still launching", initialized: false, wantActivated: nil, wantWaiting: true},
		{name: "initialized while planned", initialized: true, wantActivated: []string{"ns/a", "ns/b"}, wantWaiting: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, b := testPod("ns", "a"), testPod("ns", "b")
			nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-x"}}
			if tc.initialized {
				nc.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.Now()}}
			}
			scheme := runtime.NewScheme()
			if err := apis.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			env := newTestPlugin(t, true, a, b)
			p := env.plugin
			p.client = fake.NewClientBuilder().WithScheme(scheme).WithObjects(nc).WithStatusSubresource(nc).Build()
			p.planner = plannerFunc(func(context.Context, []*corev1.Pod) (*simulation.Plan, error) {
				return &simulation.Plan{InFlight: map[types.UID]string{a.UID: nc.Name, b.UID: nc.Name}}, nil
			})
			postFilterMessage(t, p, a)
			postFilterMessage(t, p, b)
			env.activator.reset()

			p.provisionBatch(t.Context())

			if got := env.activator.keys(); !slices.Equal(got, tc.wantActivated) {
				t.Errorf("activated %v, want %v", got, tc.wantActivated)
			}
			_, waiting := p.waits.nodeClaimFor(a.UID)
			if waiting != tc.wantWaiting {
				t.Errorf("pod a waits for the NodeClaim: %v, want %v", waiting, tc.wantWaiting)
			}
		})
	}
}

// TestRetryOnRegisteredNodes: pods the plan sends back to kube-scheduler (Plan.Retry: a
// registered node takes them now) are activated at once, wait for no NodeClaim, and stay
// pending: if kube-scheduler refuses them again, the next batch plans them again.
func TestRetryOnRegisteredNodes(t *testing.T) {
	a, b := testPod("ns", "a"), testPod("ns", "b")
	env := newTestPlugin(t, true, a, b)
	p := env.plugin
	p.planner = plannerFunc(func(context.Context, []*corev1.Pod) (*simulation.Plan, error) {
		return &simulation.Plan{Retry: map[types.UID]string{a.UID: "node-1"}, Unschedulable: map[types.UID]string{b.UID: "no NodePool fits"}}, nil
	})
	postFilterMessage(t, p, a)
	postFilterMessage(t, p, b)
	env.activator.reset()

	p.provisionBatch(t.Context())

	if got := env.activator.keys(); !slices.Equal(got, []string{"ns/a"}) {
		t.Errorf("activated %v, want [ns/a]", got)
	}
	if _, waiting := p.waits.nodeClaimFor(a.UID); waiting {
		t.Error("pod a waits for a NodeClaim; it was sent back to kube-scheduler")
	}
	if !p.pending.has(a.UID) {
		t.Error("pod a left the pending set; it must be planned again if kube-scheduler refuses it")
	}
}
