package disruption

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/e2e/framework"
)

// TestUnderutilizedNodesConsolidate: 12 pods of 700m get nodes; scaled to 4 (2.8 cpu), the
// NodePool (WhenEmptyOrUnderutilized, consolidateAfter 10s) is consolidated down to 4 cpu of
// c5 capacity, the least that holds them, and the Deployment's PDB (minAvailable 3) holds
// throughout: sampled every 250 ms, never fewer than 3 of its pods running and not
// terminating.
func TestUnderutilizedNodesConsolidate(t *testing.T) {
	pool := framework.UniqueName("consolidate")
	createNodePool(t, pool, `  disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 10s, budgets: [{nodes: "100%"}]}`)
	ns := env.Namespace(t)
	createDeployment(t, ns, pool, "web", 12, "700m")
	env.AwaitPods(t, ns, "app=web", 12, timeout, running)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: policyv1.PodDisruptionBudgetSpec{
		MinAvailable: ptr.To(intstr.FromInt32(3)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	if _, err := env.Client.PolicyV1().PodDisruptionBudgets(ns).Create(t.Context(), pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	scale(t, ns, "web", 4)
	env.AwaitPods(t, ns, "app=web", 4, timeout, running)
	before := mustNodeClaims(t, pool)

	var mu sync.Mutex
	fewest := 4
	consolidated := map[string]bool{} // NodeClaims chosen by a command with reason Underutilized
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"}); err == nil {
				available := 0
				for _, p := range list.Items {
					if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
						available++
					}
				}
				mu.Lock()
				fewest = min(fewest, available)
				mu.Unlock()
			}
			if ncs, err := nodeClaims(ctx, pool); err == nil {
				mu.Lock()
				for _, nc := range ncs {
					if nc.Annotations["joinery.dev/disruption-reason"] == karpv1.DisruptionReasonUnderutilized {
						consolidated[nc.Name] = true
					}
				}
				mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	defer func() { cancel(); <-done }()

	framework.Eventually(t, 2*timeout, "NodePool consolidated to 4 cpu", func(ctx context.Context) (bool, error) {
		ncs, err := nodeClaims(ctx, pool)
		if err != nil {
			return false, err
		}
		cpu := int64(0)
		for _, nc := range ncs {
			if nc.DeletionTimestamp != nil {
				return false, fmt.Errorf("%s still being deleted", nc.Name)
			}
			cpu += nc.Status.Capacity.Cpu().Value()
		}
		if cpu > 4 {
			return false, fmt.Errorf("%d NodeClaims with %d cpu", len(ncs), cpu)
		}
		return true, nil
	})
	env.AwaitPods(t, ns, "app=web", 4, timeout, running)
	cancel()
	<-done
	t.Logf("4 pods: %d NodeClaims after the scale-down, %d after consolidation; consolidated %v", len(before), len(mustNodeClaims(t, pool)), consolidated)
	if len(consolidated) == 0 {
		t.Error("no NodeClaim was consolidated (reason Underutilized); emptiness alone did the work")
	}
	if fewest < 3 {
		t.Errorf("only %d pods of the Deployment were available at one point; its PDB says minAvailable 3", fewest)
	}
}
