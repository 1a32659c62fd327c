package lifecycle

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/e2e/framework"
)

// driftTimeout bounds a NodePool change → the Drifted condition following it: the controller
// reacts to the NodePool's watch event within a second; the rest is room for a loaded machine.
const driftTimeout = 30 * time.Second

// TestNodePoolChangesDriftNodeClaims: changing a NodePool's template labels marks its launched
// NodeClaim Drifted with NodePoolDrifted (static drift, through the karpenter.sh/nodepool-hash
// annotations), changing them back clears it, and narrowing the requirements past the
// NodeClaim's labels marks it RequirementsDrifted.
func TestNodePoolChangesDriftNodeClaims(t *testing.T) {
	name := framework.UniqueName("drift")
	createNodePool(t, name, "")
	hash, version := awaitNodePoolHash(t, name)

	nc := nodeClaim(t, name, name)
	nc.Annotations = map[string]string{karpv1.NodePoolHashAnnotationKey: hash, karpv1.NodePoolHashVersionAnnotationKey: version}
	env.Create(t, framework.NodeClaims, toJSON(t, nc))
	selector := "joinery.dev/e2e-group=" + name
	env.AwaitNodeClaims(t, selector, 1, readyTimeout, framework.NodeClaimCondition("Ready", "True"))
	if cond := driftedCondition(t, name); cond != nil {
		t.Fatalf("a NodeClaim matching its NodePool is Drifted: %v", cond)
	}

	begin := time.Now()
	patchNodePool(t, name, `{"spec": {"template": {"metadata": {"labels": {"joinery.dev/e2e-drift": "v2"}}}}}`)
	env.AwaitNodeClaims(t, selector, 1, driftTimeout, driftedWith("NodePoolDrifted"))
	t.Logf("template labels changed → NodeClaim Drifted in %s", time.Since(begin).Round(time.Millisecond))

	patchNodePool(t, name, `{"spec": {"template": {"metadata": {"labels": {"joinery.dev/e2e-drift": null}}}}}`)
	env.AwaitNodeClaims(t, selector, 1, driftTimeout, driftedWith(""))

	// A merge patch replaces the whole list: the capacity type narrows to spot, the os stays.
	patchNodePool(t, name, `{"spec": {"template": {"spec": {"requirements": [
		{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
		{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}}}}`)
	env.AwaitNodeClaims(t, selector, 1, driftTimeout, driftedWith("RequirementsDrifted"))
}

// awaitNodePoolHash waits for the NodePool controller to stamp the template hash and returns it
// with its version.
func awaitNodePoolHash(t *testing.T, name string) (hash, version string) {
	t.Helper()
	framework.Eventually(t, readyTimeout, "nodepool "+name+" hash annotations", func(ctx context.Context) (bool, error) {
		np, err := env.Dynamic.Resource(framework.NodePools).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		hash = np.GetAnnotations()[karpv1.NodePoolHashAnnotationKey]
		version = np.GetAnnotations()[karpv1.NodePoolHashVersionAnnotationKey]
		return hash != "" && version != "", nil
	})
	return hash, version
}

func patchNodePool(t *testing.T, name, patch string) {
	t.Helper()
	if _, err := env.Dynamic.Resource(framework.NodePools).Patch(t.Context(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch nodepool %s: %v", name, err)
	}
}

// driftedWith checks a NodeClaim's Drifted condition is True with reason, or absent when reason
// is empty, for AwaitNodeClaims.
func driftedWith(reason string) func(unstructured.Unstructured) error {
	return func(nc unstructured.Unstructured) error {
		cond := findCondition(nc, "Drifted")
		switch {
		case reason == "" && cond != nil:
			return fmt.Errorf("still Drifted: %v", cond)
		case reason == "":
			return nil
		case cond == nil:
			return fmt.Errorf("no Drifted condition")
		case cond["status"] != "True" || cond["reason"] != reason:
			return fmt.Errorf("Drifted=%v reason %v, want True with %s", cond["status"], cond["reason"], reason)
		}
		return nil
	}
}

func driftedCondition(t *testing.T, name string) map[string]any {
	t.Helper()
	nc, err := env.Dynamic.Resource(framework.NodeClaims).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get nodeclaim %s: %v", name, err)
	}
	return findCondition(*nc, "Drifted")
}

func findCondition(nc unstructured.Unstructured, condType string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(nc.Object, "status", "conditions")
	for _, c := range conds {
		if cond, ok := c.(map[string]any); ok && cond["type"] == condType {
			return cond
		}
	}
	return nil
}
