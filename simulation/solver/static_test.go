package solver

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/simulation"
)

func static(replicas int64) poolOption {
	return func(np *karpv1.NodePool) { np.Spec.Replicas = &replicas }
}

// TestPlanStaticNodePools checks that the provisioner never adds NodeClaims to a static
// NodePool, yet plans pods onto its NodeClaims still launching.
func TestPlanStaticNodePools(t *testing.T) {
	launching := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "fixed-abcde", Labels: map[string]string{karpv1.NodePoolLabelKey: "fixed"}},
		Spec: karpv1.NodeClaimSpec{Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
			{Key: karpv1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"fixed"}},
			{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.2xlarge"}},
			{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
		}},
	}
	cases := []struct {
		name  string
		state *StaticState
		batch []*corev1.Pod
		check func(t *testing.T, plan *simulation.Plan)
	}{{
		name:  "the only NodePool is static: unschedulable, no NodeClaim",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("fixed", static(2))}},
		batch: pods(1, "web", "1", "1Gi"),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 0)
			wantUnschedulable(t, plan, "uid-web-0", `nodepool "fixed" is static`)
		},
	}, {
		name:  "a dynamic NodePool of lower weight launches instead",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("fixed", static(2)), nodePool("default")}},
		batch: pods(2, "web", "1", "1Gi"),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 1)
			wantPool(t, plan.NewNodeClaims[0].NodeClaim, "default")
		},
	}, {
		name:  "pods join a static NodePool's NodeClaim in flight",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("fixed", static(1))}, NodeClaimList: []*karpv1.NodeClaim{launching}},
		batch: pods(2, "web", "1", "1Gi"),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 0)
			for _, uid := range []string{"uid-web-0", "uid-web-1"} {
				if got := plan.InFlight[types.UID(uid)]; got != launching.Name {
					t.Errorf("%s planned onto %q, want %q", uid, got, launching.Name)
				}
			}
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, planAndVerify(t, tc.state, nil, tc.batch))
		})
	}
}

// TestStaticNodeClaim checks the NodeClaim a static NodePool launches: built as a new claim's,
// from the template alone.
func TestStaticNodeClaim(t *testing.T) {
	np := nodePool("fixed", static(3), threeZones())
	nc, err := StaticNodeClaim(np, kwokTypes(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if nc.GenerateName != "fixed-" || nc.Labels[karpv1.NodePoolLabelKey] != "fixed" || nc.Annotations[karpv1.NodePoolHashAnnotationKey] != "hash-fixed" {
		t.Errorf("metadata %+v", nc.ObjectMeta)
	}
	if len(nc.OwnerReferences) != 1 || nc.OwnerReferences[0].Kind != "NodePool" || nc.OwnerReferences[0].Name != "fixed" {
		t.Errorf("owner references %+v", nc.OwnerReferences)
	}
	names := instanceTypes(nc)
	if len(names) == 0 || len(names) > DefaultMaxInstanceTypes {
		t.Fatalf("instance types %d, want 1..%d", len(names), DefaultMaxInstanceTypes)
	}
	assertCheapestFirst(t, nc, names)
	if got := requirement(nc, zone).Len(); got != 3 {
		t.Errorf("zone requirement has %d values, want the template's 3", got)
	}
	if len(simulation.PlannedPods(nc)) != 0 {
		t.Errorf("planned pods %v, want none", simulation.PlannedPods(nc))
	}

	none := nodePool("none", static(1), requiring(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, nil, "no-such-type"))
	if _, err := StaticNodeClaim(none, kwokTypes(t), Options{}); err == nil {
		t.Error("a NodePool without instance types built a NodeClaim; want an error")
	}
}
