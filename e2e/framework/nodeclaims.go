package framework

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// NodeClaims is the karpenter.sh/v1 NodeClaim resource.
var NodeClaims = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodeclaims"}

// AwaitNodeClaims waits until exactly want NodeClaims match selector and each passes ok.
func (e *Env) AwaitNodeClaims(t *testing.T, selector string, want int, timeout time.Duration, ok func(unstructured.Unstructured) error) []unstructured.Unstructured {
	t.Helper()
	var claims []unstructured.Unstructured
	Eventually(t, timeout, fmt.Sprintf("%d NodeClaims %q", want, selector), func(ctx context.Context) (bool, error) {
		list, err := e.Dynamic.Resource(NodeClaims).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err
		}
		claims = list.Items
		if len(claims) != want {
			return false, fmt.Errorf("%d NodeClaims", len(claims))
		}
		for _, nc := range claims {
			if err := ok(nc); err != nil {
				return false, fmt.Errorf("NodeClaim %s: %w", nc.GetName(), err)
			}
		}
		return true, nil
	})
	return claims
}

// NodeClaimCondition checks a NodeClaim's condition has status, for AwaitNodeClaims.
func NodeClaimCondition(condType, status string) func(unstructured.Unstructured) error {
	return func(nc unstructured.Unstructured) error {
		conds, _, _ := unstructured.NestedSlice(nc.Object, "status", "conditions")
		for _, c := range conds {
			if cond, ok := c.(map[string]any); ok && cond["type"] == condType {
				if cond["status"] == status {
					return nil
				}
				return fmt.Errorf("%s=%v (%v)", condType, cond["status"], cond["reason"])
			}
		}
		return fmt.Errorf("no %s condition", condType)
	}
}

// unstructuredString renders the field at path as compact JSON-ish text for dumps.
func unstructuredString(obj map[string]any, path ...string) (string, bool, error) {
	value, found, err := unstructured.NestedFieldNoCopy(obj, path...)
	if err != nil || !found {
		return "", found, err
	}
	return fmt.Sprint(value), true, nil
}
