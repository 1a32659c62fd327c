package provisioning

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/joinery-dev/joinery/e2e/framework"
)

// TestFreedLimitsArePlannedAgain is issue 26's reproduction: a NodePool limited to 8 cpu, a
// Deployment of 12 one-cpu pods; some run, the rest are refused for the limit. Deleting the
// NodePool's NodeClaims evicts the running pods; their replacements are refused while the
// deleting NodeClaims still count, and must be planned again once those are gone — with no
// node of the NodePool left, kube-scheduler never brings them back to PostFilter, and its
// periodic flush of unschedulable pods (5 minutes) comes after runningTimeout.
func TestFreedLimitsArePlannedAgain(t *testing.T) {
	pool := framework.UniqueName("freed")
	createGroupNodePool(t, pool, nodePool{name: pool, cpu: "8"})
	ns := env.Namespace(t)
	createDeployment(t, ns, pool, group{name: "web", replicas: 12, cpu: "1", memory: "256Mi"})
	selector := "joinery.dev/e2e-group=" + pool

	// settled waits until some pods run and every other one is refused for the limit, and
	// returns how many run.
	settled := func(what string) int {
		var runningPods int
		framework.Eventually(t, runningTimeout, what, func(ctx context.Context) (bool, error) {
			pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				return false, err
			}
			runningPods = 0
			explained := 0
			for _, pod := range pods.Items {
				if pod.DeletionTimestamp != nil {
					continue
				}
				if pod.Status.Phase == corev1.PodRunning {
					runningPods++
					continue
				}
				for _, c := range pod.Status.Conditions {
					if c.Type == corev1.PodScheduled && strings.Contains(c.Message, "no NodePool fits") {
						explained++
					}
				}
			}
			if runningPods == 0 || runningPods+explained != 12 {
				return false, fmt.Errorf("%d running, %d refused with a reason, of 12", runningPods, explained)
			}
			return true, nil
		})
		return runningPods
	}
	before := settled("the limited NodePool's pods to settle")
	claims := nodeClaimsOf(t, pool)
	old := sets.New[string]()
	for _, nc := range claims {
		old.Insert(nc.GetName())
	}
	t.Logf("%d pods run on %d NodeClaims within the limit", before, len(claims))

	if err := env.Dynamic.Resource(framework.NodeClaims).DeleteCollection(t.Context(), metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: "karpenter.sh/nodepool=" + pool}); err != nil {
		t.Fatalf("deleting the NodePool's NodeClaims: %v", err)
	}
	framework.Eventually(t, runningTimeout, "the deleted NodeClaims to go", func(ctx context.Context) (bool, error) {
		for _, nc := range nodeClaimsOf(t, pool) {
			if old.Has(nc.GetName()) {
				return false, fmt.Errorf("NodeClaim %s is still there", nc.GetName())
			}
		}
		return true, nil
	})
	after := settled("the evicted pods to be planned again and run once the limit is free")
	t.Logf("%d pods run again on new NodeClaims", after)
	for _, nc := range nodeClaimsOf(t, pool) {
		if old.Has(nc.GetName()) {
			t.Errorf("NodeClaim %s was deleted and is still there", nc.GetName())
		}
	}
}
