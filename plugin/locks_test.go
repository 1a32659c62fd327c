package plugin

import (
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// TestEntryPointsRunConcurrently: kube-scheduler's cycle, the informers' handlers and the
// batch loop call the plugin on goroutines of their own. Under the plugin's lock and its two
// books' (launch tracker, hold book) they must neither race (run with -race) nor deadlock (a
// lock taken in the wrong order hangs the test).
func TestEntryPointsRunConcurrently(t *testing.T) {
	pods := []*corev1.Pod{testPod("ns", "a"), testPod("ns", "b"), testPod("ns", "c")}
	env := newTestPlugin(t, true, pods...)
	p := env.plugin
	ctx := t.Context()
	info := framework.NewNodeInfo()
	info.SetNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Spec: corev1.NodeSpec{ProviderID: "kwok://a"}})
	const rounds = 200

	var wg sync.WaitGroup
	// The NodeClaim informer: the NodeClaim launches, registers, initializes and is deleted,
	// over and over.
	wg.Go(func() {
		handler := p.nodeClaimHandler(ctx)
		for i := range rounds {
			nc := withPlanned("default-a", uids(pods)...)
			if i%4 >= 1 {
				nc.Status.NodeName, nc.Status.ProviderID = "node-a", "kwok://a"
			}
			if i%4 >= 2 {
				nc.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue}}
			}
			handler.OnUpdate(nil, nc)
			if i%4 == 3 {
				handler.OnDelete(nc)
			}
		}
	})
	// Scheduling cycles of each pod.
	for _, pod := range pods {
		wg.Go(func() {
			for range rounds {
				state := framework.NewCycleState()
				p.PreFilter(ctx, state, pod, nil)
				p.Filter(ctx, state, pod, info)
				p.PostFilter(ctx, state, pod, nil)
				p.Reserve(ctx, state, pod, "node-a")
				p.Unreserve(ctx, state, pod, "node-a")
			}
		})
	}
	// The pod informer and the batch loop.
	wg.Go(func() {
		for i := range rounds {
			p.observePod(ctx, pods[i%len(pods)])
			p.launches.writesUnobserved()
			p.nominate(p.holds.beginPlan(nil), "default-a", p.stillPending(p.takeBatch()))
		}
	})
	wg.Wait()
}
