package overlay

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/apis/karpenter/v1alpha1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/e2e/framework"
)

// TestDevicesOverlayGivesATypeDevices: no kwok type has a b200 GPU, so a pod whose
// ResourceClaim selects one (CEL on productName) stays pending with DynamicResources' reason
// for its NodePool (c5.large and m5.large, no GPUs). A NodeOverlay whose joinery.dev/devices
// annotation gives this NodePool's m5.large one b200 gets the pod a NodeClaim of m5.large (the
// dearer of the two: the only one with the device), and the pod runs: kube-scheduler allocates
// the claim from the slice the local cluster's DRA driver stand-in publishes for the node,
// the devices the overlay predicted. An overlay whose annotation is not a device list is
// Ready=False, Invalid, naming the annotation.
func TestDevicesOverlayGivesATypeDevices(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const pool = "ovl-devices"
	createNodePool(t, pool)
	ns := env.Namespace(t)

	class := &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: pool},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "gpu.nvidia.com"`},
		}}},
	}
	if _, err := env.Client.ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create DeviceClass: %v", err)
	}
	t.Cleanup(func() {
		_ = env.Client.ResourceV1().DeviceClasses().Delete(context.Background(), pool, metav1.DeleteOptions{})
	})
	claim := framework.GPUClaim(ns, "one-b200", pool, "gpu", "b200", 1)
	if _, err := env.Client.ResourceV1().ResourceClaims(ns).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ResourceClaim: %v", err)
	}
	spec := framework.GroupPodSpec(pool, "500m", "256Mi")
	claimName := claim.Name
	spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claimName}}
	spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b200", Namespace: ns}, Spec: spec}
	if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}

	wantReason := fmt.Sprintf("nodepool %q: DynamicResources", pool)
	framework.Eventually(t, timeout, "a FailedScheduling event with DynamicResources' reason", func(ctx context.Context) (bool, error) {
		events, err := env.Client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Regarding.Name == pod.Name && e.Reason == "FailedScheduling" && strings.Contains(e.Note, wantReason) {
				t.Logf("pending: %s", e.Note)
				return true, nil
			}
		}
		return false, fmt.Errorf("no FailedScheduling event saying %q among %d events", wantReason, len(events.Items))
	})
	if ncs, err := env.Dynamic.Resource(framework.NodeClaims).List(ctx, metav1.ListOptions{LabelSelector: karpv1.NodePoolLabelKey + "=" + pool}); err != nil {
		t.Fatal(err)
	} else if len(ncs.Items) != 0 {
		t.Fatalf("%d NodeClaims launched without the overlay, want none", len(ncs.Items))
	}

	env.Create(t, nodeOverlays, fmt.Sprintf(`
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata:
  name: ovl-devices-b200
  annotations:
    %s: '[{"driver":"gpu.nvidia.com","model":"b200","count":1,"memoryMiB":184320}]'
spec:
  requirements:
  - {key: karpenter.sh/nodepool, operator: In, values: [%s]}
  - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}
`, cloudprovider.DevicesAnnotationKey, pool))
	nc := nodeClaimOf(t, ns, pod.Name)
	if typ := nc.Labels[corev1.LabelInstanceTypeStable]; typ != "m5.large" {
		t.Errorf("the pod claiming a b200 got a %s, want the m5.large the overlay gives one", typ)
	}
	awaitReady(t, "ovl-devices-b200", metav1.ConditionTrue, v1alpha1.ConditionReasonApplied)

	got, err := env.Client.ResourceV1().ResourceClaims(ns).Get(ctx, claim.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a := got.Status.Allocation; a == nil || len(a.Devices.Results) != 1 || a.Devices.Results[0].Driver != cloudprovider.NVIDIAGPUDriver || a.Devices.Results[0].Pool != nc.Status.NodeName {
		t.Errorf("claim allocation %s, want one gpu.nvidia.com device of node %s", fmt.Sprint(got.Status.Allocation), nc.Status.NodeName)
	}

	env.Create(t, nodeOverlays, fmt.Sprintf(`
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata:
  name: ovl-devices-invalid
  annotations:
    %s: '[{"driver":"gpu.nvidia.com","model":"b200"'
spec:
  requirements:
  - {key: karpenter.sh/nodepool, operator: In, values: [%s-none]}
`, cloudprovider.DevicesAnnotationKey, pool))
	invalid := awaitReady(t, "ovl-devices-invalid", metav1.ConditionFalse, v1alpha1.ConditionReasonInvalid)
	if !strings.Contains(invalid.Message, cloudprovider.DevicesAnnotationKey) {
		t.Errorf("Invalid message %q does not name the annotation %s", invalid.Message, cloudprovider.DevicesAnnotationKey)
	}
}
