package disruption

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// TestAllowedCountsInitializedNodesOnly: budgets are taken over the NodePool's initialized
// nodes (Karpenter's rule), so NodeClaims still launching or initializing neither raise the
// total nor consume the room for disruption.
func TestAllowedCountsInitializedNodesOnly(t *testing.T) {
	launching := func(nc *karpv1.NodeClaim, n *corev1.Node) {
		notInitialized(nc, n)
		nc.Status.NodeName = "" // no Node yet
	}
	tests := []struct {
		name string
		// ready initialized nodes, then nodes in each other state
		ready, launching, initializing, notReady, deleting, deletingLaunching, terminating int
		nodes                                                                              string
		want                                                                               int
	}{
		{name: "10 ready + 5 launching under 10% allows 1", ready: 10, launching: 5, nodes: "10%", want: 1},
		{name: "10 ready + 5 registered, uninitialized, under 10% allows 1", ready: 10, initializing: 5, nodes: "10%", want: 1},
		{name: "a scale-up does not zero a static budget", ready: 3, launching: 4, nodes: "2", want: 2},
		{name: "20% of 9 ready rounds up to 2 whatever is launching", ready: 9, launching: 6, nodes: "20%", want: 2},
		{name: "an initialized NotReady node still counts against the budget", ready: 9, notReady: 1, nodes: "20%", want: 1},
		{name: "an initialized node being deleted still counts", ready: 9, deleting: 1, nodes: "20%", want: 1},
		{name: "a launching node being deleted does not", ready: 10, deletingLaunching: 1, nodes: "10%", want: 1},
		// Karpenter's rule: drained, its instance terminating, the node waits only for the
		// cloud and its finalizer; it holds no budget and is not in the total.
		{name: "a node whose instance is terminating does not", ready: 4, terminating: 1, nodes: "10%", want: 1},
		{name: "nor against a static budget", ready: 3, terminating: 1, nodes: "1", want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []client.Object{testNodePool("default", budgets(karpv1.Budget{Nodes: tt.nodes}))}
			i := 0
			add := func(n int, opts ...ncOption) {
				for range n {
					nc, node := testNode(fmt.Sprintf("n%02d", i), "default", opts...)
					i++
					if nc.Status.NodeName == "" {
						objs = append(objs, nc)
						continue
					}
					objs = append(objs, nc, node)
				}
			}
			add(tt.ready)
			add(tt.launching, launching)
			add(tt.initializing, notInitialized, notReadyNode)
			add(tt.notReady, notReadyNode)
			add(tt.deleting, deleting)
			add(tt.deletingLaunching, launching, deleting)
			add(tt.terminating, deleting, instanceTerminatingClaim)
			cluster, _ := loadCluster(t, objs...)
			for _, reason := range budgetReasons {
				allowed, errs := cluster.Allowed(reason, epoch)
				if len(errs) > 0 {
					t.Fatal(errs)
				}
				if allowed["default"] != tt.want {
					t.Errorf("%s: allowed %d, want %d (counts %+v)", reason, allowed["default"], tt.want, cluster.Counts()["default"])
				}
			}
		})
	}
}

// instanceTerminatingClaim marks nc drained and its instance terminating.
func instanceTerminatingClaim(nc *karpv1.NodeClaim, _ *corev1.Node) {
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeInstanceTerminating,
		Status: metav1.ConditionTrue, Reason: "InstanceTerminating", LastTransitionTime: metav1.NewTime(epoch)})
}

// TestAllowedOnceDisrupted: the budget a pass decides with while nodes being disrupted hold
// all of it is the NodePool's budget without them; otherwise it is Allowed's.
func TestAllowedOnceDisrupted(t *testing.T) {
	tests := []struct {
		name                      string
		nodes                     string
		ready, deleting, notReady int
		now, once                 int
	}{
		{name: "10% of 5 held by one deleting: one once it is gone", nodes: "10%", ready: 4, deleting: 1, now: 0, once: 1},
		{name: "a static 1 held by one deleting", nodes: "1", ready: 4, deleting: 1, now: 0, once: 1},
		{name: "a budget with room left is Allowed's", nodes: "3", ready: 4, deleting: 1, now: 2, once: 2},
		{name: "nothing deleting: a zero budget stays zero", nodes: "0", ready: 5, now: 0, once: 0},
		{name: "a zero budget stays zero while nodes are deleted", nodes: "0", ready: 4, deleting: 1, now: 0, once: 0},
		{name: "NotReady nodes still count", nodes: "1", ready: 3, deleting: 1, notReady: 1, now: 0, once: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []client.Object{testNodePool("default", budgets(karpv1.Budget{Nodes: tt.nodes}))}
			i := 0
			add := func(n int, opts ...ncOption) {
				for range n {
					objs = append(objs, pair(testNode(fmt.Sprintf("n%02d", i), "default", opts...))...)
					i++
				}
			}
			add(tt.ready)
			add(tt.deleting, deleting)
			add(tt.notReady, notReadyNode)
			cluster, _ := loadCluster(t, objs...)
			now, _ := cluster.Allowed(karpv1.DisruptionReasonUnderutilized, epoch)
			once := cluster.AllowedOnceDisrupted(karpv1.DisruptionReasonUnderutilized, epoch)
			if now["default"] != tt.now || once["default"] != tt.once {
				t.Errorf("allowed now %d, once the disrupted nodes are gone %d; want %d, %d", now["default"], once["default"], tt.now, tt.once)
			}
		})
	}
}
