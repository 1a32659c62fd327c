package disruption

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/joinery-dev/joinery/controller/disruption"
	"github.com/joinery-dev/joinery/e2e/framework"
)

// TestConsolidationKeepsPodsWithAllocatedClaims (issue 27, part 2): two pods, each with a
// ResourceClaim for one a10g GPU, run on two g5.xlarge nodes (one a10g each), a tenth of
// each node used; a c5.large node of the same NodePool (WhenEmptyOrUnderutilized) runs a pod
// pinned to c5.large and has room for both by cpu and memory, and the NodePool also offers a
// g6.xlarge, cheaper, with an l4 GPU. Each claim is allocated a device of its node, so no
// other node has it: consolidation evaluates the GPU nodes and keeps them, with an
// Unconsolidatable event saying the pod would not schedule, never deleting one (its pod onto
// the c5.large) nor replacing one (by a c5.large or the l4 type); no NodeClaim is created,
// and the pods keep running on their nodes with their claims allocated there. If the
// simulation ignored the claims (IGNORE_DRA_REQUESTS), multi-node consolidation would delete
// both GPU nodes and move their pods onto the c5.large.
func TestConsolidationKeepsPodsWithAllocatedClaims(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	group := framework.UniqueName("dra-keep")
	createPool(t, pool{name: group, spec: `  disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 5s, budgets: [{nodes: "100%"}]}`,
		capacityTypes: []string{onDemand}, types: []string{"c5.large", "g6.xlarge", "g5.xlarge"}})
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
		_ = env.Client.ResourceV1().DeviceClasses().Delete(context.Background(), group, metav1.DeleteOptions{})
	})
	ns := env.Namespace(t)

	cpu := framework.GroupPodSpec(group, "500m", "256Mi")
	cpu.NodeSelector[corev1.LabelInstanceTypeStable] = "c5.large"
	createBarePod(t, ns, "cpu", cpu)
	cpuNode := env.AwaitPodRunning(t, ns, "cpu", timeout).Spec.NodeName

	gpuPods := []string{"gpu-0", "gpu-1"}
	for _, name := range gpuPods {
		claim := framework.GPUClaim(ns, name, group, "gpu", "a10g", 1)
		if _, err := env.Client.ResourceV1().ResourceClaims(ns).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create ResourceClaim: %v", err)
		}
		spec := framework.GroupPodSpec(group, "400m", "256Mi")
		spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claim.Name}}
		spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
		createBarePod(t, ns, name, spec)
	}
	gpuNodes := map[string]string{} // pod → node
	for _, name := range gpuPods {
		node := env.AwaitPodRunning(t, ns, name, timeout).Spec.NodeName
		n, err := env.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if typ := n.Labels[corev1.LabelInstanceTypeStable]; typ != "g5.xlarge" {
			t.Fatalf("pod %s claiming an a10g runs on a %s, want g5.xlarge", name, typ)
		}
		gpuNodes[name] = node
	}
	if gpuNodes["gpu-0"] == gpuNodes["gpu-1"] {
		t.Fatalf("both GPU pods run on %s, which has one a10g", gpuNodes["gpu-0"])
	}

	ncs := mustNodeClaims(t, group)
	if len(ncs) != 3 {
		t.Fatalf("NodeClaims %s, want the c5.large and two g5.xlarge", summary(ncs))
	}
	before := sets.New[string]()
	gpuClaims := map[string]string{} // node → NodeClaim
	for _, nc := range ncs {
		before.Insert(nc.Name)
		if nc.Status.NodeName != cpuNode {
			gpuClaims[nc.Status.NodeName] = nc.Name
		}
	}
	w := watch(t, group)

	// Consolidation looked at each GPU node and refused it, then looked again.
	for _, name := range gpuPods {
		awaitEvent(t, disruption.EventUnconsolidatable, gpuClaims[gpuNodes[name]], fmt.Sprintf("pod %s/%s would not schedule", ns, name))
	}
	awaitEvaluations(t, methodSingleNodeConsol, 2)
	w.stop()

	for name := range w.seenCandidates {
		t.Errorf("NodeClaim %s (%s) was chosen for disruption (reason %q)", name, w.seen[name].Labels[corev1.LabelInstanceTypeStable], w.reasons[name])
	}
	if created := w.seenNames().Difference(before); created.Len() > 0 {
		for name := range created {
			t.Errorf("NodeClaim %s (%s) was created", name, w.seen[name].Labels[corev1.LabelInstanceTypeStable])
		}
	}
	if ncs := mustNodeClaims(t, group); len(live(ncs)) != 3 {
		t.Errorf("NodeClaims now %s, want the three of before", summary(ncs))
	}
	for _, name := range gpuPods {
		p, err := env.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("pod %s: %v", name, err)
		}
		if err := framework.RunningOn(gpuNodes[name])(*p); err != nil || p.DeletionTimestamp != nil {
			t.Errorf("pod %s: %v (deleting %v)", name, err, p.DeletionTimestamp != nil)
		}
		claim, err := env.Client.ResourceV1().ResourceClaims(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if a := claim.Status.Allocation; a == nil || len(a.Devices.Results) != 1 || a.Devices.Results[0].Pool != gpuNodes[name] {
			t.Errorf("claim %s allocation %s, want a device of %s", name, fmt.Sprint(claim.Status.Allocation), gpuNodes[name])
		}
	}
	if t.Failed() {
		return
	}
	t.Logf("GPU nodes kept: %v", gpuNodes)
}

// createBarePod creates a pod without an owner.
func createBarePod(t *testing.T, ns, name string, spec corev1.PodSpec) {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{framework.GroupLabel: spec.NodeSelector[framework.GroupLabel]}}, Spec: spec}
	if _, err := env.Client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
}
