package scheduling

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

func TestOperatorsMatchKarpenterAPI(t *testing.T) {
	if NodeSelectorOpGte != karpv1.NodeSelectorOpGte || NodeSelectorOpLte != karpv1.NodeSelectorOpLte {
		t.Errorf("Gte/Lte spelled %q/%q here, %q/%q in apis/karpenter/v1", NodeSelectorOpGte, NodeSelectorOpLte, karpv1.NodeSelectorOpGte, karpv1.NodeSelectorOpLte)
	}
}

func TestNodeSelectorRequirementsWithMinValuesRoundTrip(t *testing.T) {
	two, three := 2, 3
	in := []karpv1.NodeSelectorRequirementWithMinValues{
		{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpExists, MinValues: &two},
		{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"t3"}, MinValues: &three},
		{Key: "karpenter.k8s.aws/instance-generation", Operator: karpv1.NodeSelectorOpGte, Values: []string{"6"}},
		{Key: "failure-domain.beta.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"us-west-2a"}},
	}
	r := FromNodeSelectorRequirementsWithMinValues(in...)
	if got, want := r.String(), "karpenter.k8s.aws/instance-family Exists and NotIn [t3], karpenter.k8s.aws/instance-generation Gte 6, topology.kubernetes.io/zone In [us-west-2a]"; got != want {
		t.Errorf("requirements = %q, want %q", got, want)
	}
	three = 30
	if got := *r["karpenter.k8s.aws/instance-family"].MinValues; got != 3 {
		t.Errorf("MinValues = %d, want 3, the larger, unaffected by later changes to the input", got)
	}
	out := r.NodeSelectorRequirementsWithMinValues()
	if len(out) != 4 {
		t.Fatalf("got %d expressions, want 4: %v", len(out), out)
	}
	if out[0].MinValues == nil || *out[0].MinValues != 3 || out[1].MinValues != nil {
		t.Errorf("MinValues should sit on the key's first expression only: %v", out)
	}
	if back := FromNodeSelectorRequirementsWithMinValues(out...); back.String() != r.String() {
		t.Errorf("round trip = %q, want %q", back.String(), r.String())
	}
}
