package v1

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
)

func TestNodeSelectorRequirementConversion(t *testing.T) {
	r := NodeSelectorRequirementWithMinValues{Key: "k", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}, MinValues: ptr.To(2)}
	got := r.NodeSelectorRequirement()
	want := corev1.NodeSelectorRequirement{Key: "k", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("NodeSelectorRequirement() = %+v, want %+v", got, want)
	}
	got.Values[0] = "changed"
	if r.Values[0] != "a" {
		t.Errorf("the returned requirement shares its values with the original")
	}
}

// The JSON form must be corev1's plus minValues, so Karpenter manifests and corev1 tooling agree.
func TestNodeSelectorRequirementJSONMatchesCoreV1(t *testing.T) {
	core := corev1.NodeSelectorRequirement{Key: "k", Operator: corev1.NodeSelectorOpGt, Values: []string{"2"}}
	coreJSON, err := json.Marshal(core)
	if err != nil {
		t.Fatal(err)
	}
	var r NodeSelectorRequirementWithMinValues
	if err := json.Unmarshal(coreJSON, &r); err != nil {
		t.Fatalf("decoding corev1 JSON %s: %v", coreJSON, err)
	}
	ours, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if string(ours) != string(coreJSON) {
		t.Errorf("JSON = %s, corev1's = %s", ours, coreJSON)
	}
}
