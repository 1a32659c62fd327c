package provisioning

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joinery-dev/joinery/e2e/framework"
)

// TestResourceClaimGetsADeviceNode: a pod whose ResourceClaim asks for two a10g GPUs gets a
// node of the only kwok type with two or more (g5.12xlarge), and runs: kube-scheduler allocates
// the claim from the ResourceSlice the local cluster's DRA driver stand-in publishes for the
// node, which is the slice the simulation predicted.
func TestResourceClaimGetsADeviceNode(t *testing.T) {
	ctx := t.Context()
	group := framework.UniqueName("dra")
	createGroupNodePool(t, group, nodePool{name: group})
	ns := env.Namespace(t)
	class := &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: group},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "gpu.nvidia.com"`},
		}}},
	}
	if _, err := env.Client.ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create DeviceClass: %v", err)
	}
	t.Cleanup(func() {
		_ = env.Client.ResourceV1().DeviceClasses().Delete(ctx, group, metav1.DeleteOptions{})
	})
	claim := framework.GPUClaim(ns, "two-a10g", group, "gpus", "a10g", 2)
	if _, err := env.Client.ResourceV1().ResourceClaims(ns).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ResourceClaim: %v", err)
	}
	spec := framework.GroupPodSpec(group, "500m", "256Mi")
	claimName := claim.Name
	spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claimName}}
	spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: group, Namespace: ns, Labels: map[string]string{"joinery.dev/e2e-group": group}}, Spec: spec}
	if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	nodeName := env.AwaitPodRunning(t, ns, pod.Name, runningTimeout).Spec.NodeName
	node, err := env.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if it := node.Labels[corev1.LabelInstanceTypeStable]; it != "g5.12xlarge" {
		t.Errorf("the pod with a claim for two a10g runs on %s, want g5.12xlarge", it)
	}
	got, err := env.Client.ResourceV1().ResourceClaims(ns).Get(ctx, claim.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Allocation == nil || len(got.Status.Allocation.Devices.Results) != 2 {
		t.Errorf("claim allocation %s, want two devices", fmt.Sprint(got.Status.Allocation))
	}
}
