package localcluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

// TestDRADriverStandIn: the stand-in publishes one device per GPU of a node's catalog type,
// owned by the node, once; a node of a type without devices gets no slice.
func TestDRADriverStandIn(t *testing.T) {
	ctx := t.Context()
	node := func(name, it string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{corev1.LabelInstanceTypeStable: it}}}
	}
	client := fake.NewClientset(node("gpu", "g5.12xlarge"), node("plain", "c5.large"))
	for range 2 {
		if err := syncResourceSlices(ctx, client); err != nil {
			t.Fatal(err)
		}
	}
	slices, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(slices.Items) != 1 {
		t.Fatalf("got %d slices, want one for the g5.12xlarge node", len(slices.Items))
	}
	rs := slices.Items[0]
	if rs.Spec.Driver != "gpu.nvidia.com" || *rs.Spec.NodeName != "gpu" || len(rs.Spec.Devices) != 4 {
		t.Errorf("slice %s: driver %s on %s with %d devices, want gpu.nvidia.com on gpu with 4", rs.Name, rs.Spec.Driver, *rs.Spec.NodeName, len(rs.Spec.Devices))
	}
	if model := rs.Spec.Devices[0].Attributes["productName"].StringValue; model == nil || *model != "a10g" {
		t.Errorf("productName %v, want a10g", model)
	}
	if len(rs.OwnerReferences) != 1 || rs.OwnerReferences[0].UID != "uid-gpu" {
		t.Errorf("owner %+v, want the node", rs.OwnerReferences)
	}
}
