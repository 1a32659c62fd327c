package localcluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/apis/karpenter/v1alpha1"
	"github.com/joinery-dev/joinery/cloudprovider"
)

func kwokNode(name, it, nodePool string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name),
		Labels: map[string]string{corev1.LabelInstanceTypeStable: it, karpv1.NodePoolLabelKey: nodePool}}}
}

// publishedDevices lists "node=driver/model×devices" for every slice, sorted.
func publishedDevices(t *testing.T, client *fake.Clientset) string {
	t.Helper()
	list, err := client.ResourceV1().ResourceSlices().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, rs := range list.Items {
		model := ""
		if len(rs.Spec.Devices) > 0 {
			if m := rs.Spec.Devices[0].Attributes["productName"].StringValue; m != nil {
				model = *m
			}
		}
		out = append(out, fmt.Sprintf("%s=%s/%s×%d", *rs.Spec.NodeName, rs.Spec.Driver, model, len(rs.Spec.Devices)))
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// TestDRADriverStandIn: the stand-in publishes one device per GPU of a node's catalog type,
// owned by the node, once; a node of a type without devices gets no slice.
func TestDRADriverStandIn(t *testing.T) {
	ctx := t.Context()
	its, err := catalogTypes()
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset(kwokNode("gpu", "g5.12xlarge", "default"), kwokNode("plain", "c5.large", "default"))
	devices := &nodeDevices{its: its}
	for range 2 {
		if err := syncResourceSlices(ctx, client, devices); err != nil {
			t.Fatal(err)
		}
	}
	if got := publishedDevices(t, client); got != "gpu=gpu.nvidia.com/a10g×4" {
		t.Fatalf("published %q, want one slice of 4 a10g for the g5.12xlarge node", got)
	}
	list, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rs := list.Items[0]; len(rs.OwnerReferences) != 1 || rs.OwnerReferences[0].UID != "uid-gpu" {
		t.Errorf("owner %+v, want the node", rs.OwnerReferences)
	}
}

// TestDRADriverStandInFollowsOverlays: with the NodeOverlay gate on, a node publishes its
// type's devices as the cluster's NodeOverlays set them for the node's NodePool (the
// simulation's prediction); an overlay created after a node registered leaves that node as
// it was.
func TestDRADriverStandInFollowsOverlays(t *testing.T) {
	ctx := t.Context()
	its, err := catalogTypes()
	if err != nil {
		t.Fatal(err)
	}
	overlay := func(name, nodePool, instanceType, value string) v1alpha1.NodeOverlay {
		return v1alpha1.NodeOverlay{
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), Generation: 1, Annotations: map[string]string{cloudprovider.DevicesAnnotationKey: value}},
			Spec: v1alpha1.NodeOverlaySpec{Requirements: []v1alpha1.NodeSelectorRequirement{
				{Key: karpv1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{nodePool}},
				{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{instanceType}},
			}},
		}
	}
	overlays := []v1alpha1.NodeOverlay{
		overlay("b200", "gpus", "m5.large", `[{"driver":"gpu.nvidia.com","model":"b200","count":2}]`),
		overlay("no-gpus", "gpus", "g5.xlarge", `[]`),
	}
	devices := &nodeDevices{its: its, overlays: cloudprovider.NewNodeOverlays(), list: func(context.Context) ([]v1alpha1.NodeOverlay, error) {
		return overlays, nil
	}}
	client := fake.NewClientset(
		kwokNode("m5-gpus", "m5.large", "gpus"), kwokNode("m5-other", "m5.large", "other"),
		kwokNode("g5-gpus", "g5.xlarge", "gpus"), kwokNode("g5-other", "g5.xlarge", "other"),
	)
	if err := syncResourceSlices(ctx, client, devices); err != nil {
		t.Fatal(err)
	}
	want := "g5-other=gpu.nvidia.com/a10g×1,m5-gpus=gpu.nvidia.com/b200×2"
	if got := publishedDevices(t, client); got != want {
		t.Fatalf("published %q, want %q", got, want)
	}

	// A later overlay applies to new nodes only.
	overlays = append(overlays, overlay("late", "other", "m5.large", `[{"driver":"gpu.nvidia.com","model":"l4","count":1}]`))
	if _, err := client.CoreV1().Nodes().Create(ctx, kwokNode("m5-other-new", "m5.large", "other"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := syncResourceSlices(ctx, client, devices); err != nil {
		t.Fatal(err)
	}
	want += ",m5-other-new=gpu.nvidia.com/l4×1"
	if got := publishedDevices(t, client); got != want {
		t.Errorf("after a later overlay published %q, want %q", got, want)
	}
}
