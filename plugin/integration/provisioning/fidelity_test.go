package provisioning

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/internal/testpods"
	"github.com/joinery-dev/joinery/simulation"
)

// TestFidelityCheckRejectsBadPlans makes sure the check every case relies on can fail: the
// published plan of two anti-affine pods passes, the same NodeClaims with a pod listed twice,
// or with both pods on one node, do not.
func TestFidelityCheckRejectsBadPlans(t *testing.T) {
	e := testEnv(t)
	e.run(t, scenario{
		name:      "two anti-affine pods",
		nodePools: []*karpv1.NodePool{nodePool("default")},
		pods:      pods(2, "db", "100m", "128Mi", labelled("app", "db"), testpods.AntiAffine(corev1.LabelHostname, "db")),
		check: func(t *testing.T, o *outcome) {
			o.wantClaims(t, 2)
			first, second := o.claim(t, "db-0"), o.claim(t, "db-1")
			moved := o.pods["db-1"].UID

			plan(t, e, first, o.pods["db-0"].UID, moved)
			if err := e.fidelity(t.Context()); err == nil || !strings.Contains(err.Error(), "planned twice") {
				t.Errorf("a pod on two NodeClaims: fidelity check says %v, want planned twice", err)
			}
			plan(t, e, second)
			if err := e.fidelity(t.Context()); err == nil || !strings.Contains(err.Error(), "InterPodAffinity") {
				t.Errorf("anti-affine pods on one NodeClaim: fidelity check says %v, want an InterPodAffinity rejection", err)
			}
		},
	})
}

// plan rewrites nc's planned-pods annotation to list uids.
func plan(t *testing.T, e *env, nc *karpv1.NodeClaim, uids ...types.UID) {
	t.Helper()
	current := &karpv1.NodeClaim{}
	if err := e.client.Get(t.Context(), client.ObjectKeyFromObject(nc), current); err != nil {
		t.Fatal(err)
	}
	before := current.DeepCopy()
	delete(current.Annotations, simulation.PlannedPodsAnnotationKey)
	simulation.AddPlannedPods(current, uids...)
	if len(uids) == 0 {
		delete(current.Annotations, simulation.PlannedPodsAnnotationKey)
	}
	if err := e.client.Patch(t.Context(), current, client.MergeFrom(before)); err != nil {
		t.Fatalf("rewriting the plan of NodeClaim %s: %v", nc.Name, err)
	}
}
