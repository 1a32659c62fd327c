package simulation

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/joinery-dev/joinery/cloudprovider"
)

// gpuClass is a DeviceClass of NVIDIA GPUs, selected by driver as the driver's own class is.
func gpuClass() *resourceapi.DeviceClass {
	return &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu.nvidia.com"},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "gpu.nvidia.com"`},
		}}},
	}
}

// gpuClaim asks for count GPUs of model (all of the node's GPUs when count is 0).
func gpuClaim(name, model string, count int64) *resourceapi.ResourceClaim {
	req := resourceapi.ExactDeviceRequest{
		DeviceClassName: "gpu.nvidia.com",
		Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: fmt.Sprintf(`device.attributes["gpu.nvidia.com"].productName == %q`, model),
		}}},
		AllocationMode: resourceapi.DeviceAllocationModeExactCount,
		Count:          count,
	}
	if count == 0 {
		req.AllocationMode, req.Count = resourceapi.DeviceAllocationModeAll, 0
	}
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{Name: "gpus", Exactly: &req}},
		}},
	}
}

func claimPod(name, claim string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
		Spec: corev1.PodSpec{
			Containers:     []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}},
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claim}},
		},
	}
}

func gpuNode(name, model string, count int64) NodeTemplate {
	t := smallNode(name, nil)
	if count > 0 {
		t.Devices = []cloudprovider.DeviceSet{{Driver: cloudprovider.NVIDIAGPUDriver, Model: model, Count: count, MemoryMiB: 24576}}
	}
	return t
}

func TestNewHypotheticalResourceSlices(t *testing.T) {
	tmpl := gpuNode("n", "a10g", 2)
	tmpl.Devices = append(tmpl.Devices, cloudprovider.DeviceSet{Driver: cloudprovider.NeuronDriver, Model: "inferentia2", Count: 1})
	got := NewHypotheticalResourceSlices(tmpl)
	if len(got) != 2 {
		t.Fatalf("got %d slices, want one per driver (2)", len(got))
	}
	gpu := got[0]
	if gpu.Spec.Driver != cloudprovider.NVIDIAGPUDriver || gpu.Spec.NodeName == nil || *gpu.Spec.NodeName != "n" || gpu.Spec.Pool.Name != "n" {
		t.Fatalf("gpu slice spec %+v, want driver %s on node n", gpu.Spec, cloudprovider.NVIDIAGPUDriver)
	}
	if len(gpu.Spec.Devices) != 2 || gpu.Spec.Devices[1].Name != "gpu-1" || *gpu.Spec.Devices[1].Attributes["index"].IntValue != 1 ||
		*gpu.Spec.Devices[0].Attributes["productName"].StringValue != "a10g" {
		t.Fatalf("gpu devices %+v, want gpu-0 and gpu-1 of a10g", gpu.Spec.Devices)
	}
	if m := gpu.Spec.Devices[0].Capacity["memory"].Value; m.String() != "24Gi" {
		t.Fatalf("gpu memory %s, want 24Gi", m.String())
	}
	if got[1].Spec.Driver != cloudprovider.NeuronDriver || len(got[1].Spec.Devices) != 1 {
		t.Fatalf("neuron slice %+v", got[1].Spec)
	}
	if NewHypotheticalResourceSlices(smallNode("plain", nil)) != nil {
		t.Fatal("a node without devices got slices")
	}
}

// TestHypotheticalNodeResourceClaims runs the real DynamicResources plugin over hypothetical
// nodes: it allocates a claim from the slices the node's instance type will publish, and
// rejects nodes that lack the devices.
func TestHypotheticalNodeResourceClaims(t *testing.T) {
	ctx := t.Context()
	objects := []runtime.Object{gpuClass(), gpuClaim("two-a", "a10g", 2), gpuClaim("two-b", "a10g", 2), gpuClaim("two-c", "a10g", 2), gpuClaim("all", "a10g", 0)}
	engine := newVolumeEngine(t, nil, objects)
	s := engine.Snapshot()
	// The claims reach DynamicResources through the DRA manager's assume cache, which the
	// informer fills after its own cache syncs.
	claims := engine.fw.SharedDRAManager().ResourceClaims()
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		for _, name := range []string{"two-a", "two-b", "two-c", "all"} {
			if _, err := claims.Get("default", name); err != nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("claims never reached the DRA manager: %v", err)
	}
	for _, tmpl := range []NodeTemplate{gpuNode("none", "", 0), gpuNode("one", "a10g", 1), gpuNode("l4", "l4", 4), gpuNode("four", "a10g", 4)} {
		if _, err := s.AddHypotheticalNode(tmpl); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		pod  *corev1.Pod
		node string
		fits bool
	}{
		{claimPod("p-none", "two-a"), "none", false},
		{claimPod("p-one", "two-a"), "one", false},
		{claimPod("p-l4", "two-a"), "l4", false},
		{claimPod("p-four", "two-a"), "four", true},
		{claimPod("p-all-none", "all"), "none", false},
		{claimPod("p-all-one", "all"), "one", true},
	} {
		status := engine.CheckPredicates(ctx, tc.pod, tc.node)
		if status.IsSuccess() != tc.fits {
			t.Errorf("claim of pod %s on node %s: %v, want fits=%v", tc.pod.Name, tc.node, status, tc.fits)
		}
		if !tc.fits && status.Plugin() != "DynamicResources" {
			t.Errorf("pod %s on node %s rejected by %q, want DynamicResources", tc.pod.Name, tc.node, status.Plugin())
		}
	}

	// Two claims of two take the four GPUs; a third finds none left.
	for _, claim := range []string{"two-a", "two-b"} {
		if status := engine.SchedulePod(ctx, claimPod("pod-"+claim, claim), "four"); !status.IsSuccess() {
			t.Fatalf("claim %s on four: %v", claim, status.AsError())
		}
	}
	if status := engine.CheckPredicates(ctx, claimPod("pod-two-c", "two-c"), "four"); status.IsSuccess() {
		t.Fatal("a third claim of two fits a node of four GPUs")
	}

	// A node replaced in a fork with more GPUs takes the claim; the revert takes them away.
	pod := claimPod("pod-fork", "two-c")
	engine.Fork()
	if _, err := s.ReplaceHypotheticalNode(gpuNode("one", "a10g", 2)); err != nil {
		t.Fatal(err)
	}
	if status := engine.CheckPredicates(ctx, pod, "one"); !status.IsSuccess() {
		t.Fatalf("claim of two on a node replaced with two GPUs: %v", status.AsError())
	}
	if err := engine.Revert(); err != nil {
		t.Fatal(err)
	}
	if status := engine.CheckPredicates(ctx, pod, "one"); status.IsSuccess() || !strings.Contains(status.Message(), "cannot allocate") {
		t.Fatalf("after revert the claim of two on a node of one GPU: %v, want cannot allocate", status)
	}

	// A node removed in a fork takes its slices along, and gets them back on revert.
	engine.Fork()
	if err := s.RemoveNode("l4"); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.ResourceSlices("l4"); ok {
		t.Fatal("a removed node kept its ResourceSlices")
	}
	if err := engine.Revert(); err != nil {
		t.Fatal(err)
	}
	if rs, _ := s.ResourceSlices("l4"); len(rs) != 1 {
		t.Fatal("revert did not restore the ResourceSlices")
	}
}
