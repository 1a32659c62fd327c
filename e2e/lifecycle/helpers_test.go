package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	kwokv1alpha1 "github.com/joinery-dev/joinery/apis/kwok/v1alpha1"
	"github.com/joinery-dev/joinery/e2e/framework"
)

// createNodePool creates a NodePool and its KWOKNodeClass, both named name, whose nodes carry
// the label joinery.dev/e2e-group=name and the extra template labels (a YAML map body).
func createNodePool(t *testing.T, name, extraLabels string) {
	t.Helper()
	env.CreateKWOKNodeClass(t, name)
	if extraLabels != "" {
		extraLabels = ", " + extraLabels
	}
	env.Create(t, framework.NodePools, fmt.Sprintf(`
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: %[1]q}
spec:
  # The suite watches NodeClaims it creates by hand; voluntary disruption (emptiness, drift
  # replacement) would remove them under it.
  disruption: {budgets: [{nodes: "0"}]}
  template:
    metadata:
      labels: {joinery.dev/e2e-group: %[1]q%[2]s}
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: %[1]q}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: kubernetes.io/os, operator: In, values: [linux]}
`, name, extraLabels))
}

// nodeClaim is a NodeClaim of NodePool pool for one small on-demand instance, as the scheduler
// would publish it.
func nodeClaim(t *testing.T, name, pool string) *karpv1.NodeClaim {
	t.Helper()
	return &karpv1.NodeClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: karpv1.SchemeGroupVersion.String(), Kind: "NodeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			karpv1.NodePoolLabelKey: pool, "joinery.dev/e2e-group": pool,
		}},
		Spec: karpv1.NodeClaimSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: karpv1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{pool}},
				{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}},
				{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}},
			},
			NodeClassRef: &karpv1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: kwokv1alpha1.KWOKNodeClassKind, Name: pool},
		},
	}
}

func toJSON(t *testing.T, obj any) string {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// cleanupTimeout bounds deleting a test's objects; t.Context is cancelled by then.
const cleanupTimeout = 30 * time.Second

// deleteNodeIfPresent deletes a Node a test made outside joinery-controller.
func deleteNodeIfPresent(t *testing.T, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if err := env.Client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete node %s: %v", name, err)
	}
}
