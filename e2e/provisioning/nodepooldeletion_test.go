package provisioning

import (
	"context"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joinery-dev/joinery/e2e/framework"
)

// TestDeletingNodePoolRemovesItsNodes: deleting a NodePool deletes its NodeClaims through their
// owner references, and each NodeClaim takes its Node (and instance) with it.
func TestDeletingNodePoolRemovesItsNodes(t *testing.T) {
	group := framework.UniqueName("pooldelete")
	createGroupNodePool(t, group, nodePool{name: group})
	ns := env.Namespace(t)
	createGroupPods(t, ns, group, 3, "1500m", "")
	pods := env.AwaitPods(t, ns, "joinery.dev/e2e-group="+group, 3, runningTimeout, running)
	nodes := map[string]bool{}
	for _, pod := range pods {
		nodes[pod.Spec.NodeName] = true
	}
	claims := nodeClaimsOf(t, group)
	if len(claims) == 0 {
		t.Fatalf("no NodeClaims of NodePool %s", group)
	}

	if err := env.Dynamic.Resource(framework.NodePools).Delete(t.Context(), group, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete NodePool %s: %v", group, err)
	}
	framework.Eventually(t, runningTimeout, fmt.Sprintf("NodeClaims and Nodes of NodePool %s to be gone", group), func(ctx context.Context) (bool, error) {
		left, err := env.Dynamic.Resource(framework.NodeClaims).List(ctx, metav1.ListOptions{LabelSelector: "karpenter.sh/nodepool=" + group})
		if err != nil {
			return false, err
		}
		if n := len(left.Items); n > 0 {
			return false, fmt.Errorf("%d NodeClaim(s) left", n)
		}
		for node := range nodes {
			_, err := env.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			if err == nil {
				return false, fmt.Errorf("node %s still exists", node)
			}
			if !apierrors.IsNotFound(err) {
				return false, err
			}
		}
		return true, nil
	})
	t.Logf("NodePool %s: %d NodeClaim(s) on %d node(s) removed with it", group, len(claims), len(nodes))
}
