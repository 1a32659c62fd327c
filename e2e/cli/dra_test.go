package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joinery-dev/joinery/cli/whatif"
	"github.com/joinery-dev/joinery/e2e/framework"
)

// TestExplainUnsatisfiableClaim: a pod claiming sixteen h100 GPUs, more than any kwok type
// has, stays pending, and explain names DynamicResources' reason for its NodePool.
func TestExplainUnsatisfiableClaim(t *testing.T) {
	ctx := t.Context()
	ns := env.Namespace(t)
	pool := framework.UniqueName("dra")
	createNodePool(t, pool, pool, "", "")
	class := &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: pool},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "gpu.nvidia.com"`},
		}}},
	}
	if _, err := env.Client.ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create DeviceClass: %v", err)
	}
	t.Cleanup(func() { _ = env.Client.ResourceV1().DeviceClasses().Delete(ctx, pool, metav1.DeleteOptions{}) })
	claim := framework.GPUClaim(ns, "sixteen-h100", pool, "gpus", "h100", 16)
	if _, err := env.Client.ResourceV1().ResourceClaims(ns).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ResourceClaim: %v", err)
	}
	pod := groupPod(ns, pool, "sixteen-h100", "1")
	name := claim.Name
	pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &name}}
	pod.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	createPod(t, pod)

	const want = "DynamicResources"
	out, _ := joinery(t, "explain", "pod", ns+"/"+pod.Name, "--scheduler-config", schedulerConfig(t), "-o", "json")
	var ex whatif.PodExplanation
	if err := json.Unmarshal([]byte(out), &ex); err != nil {
		t.Fatalf("explain -o json: %v\n%s", err, out)
	}
	if ex.State != "pending" {
		t.Fatalf("state %q, want pending\n%s", ex.State, out)
	}
	i := slices.IndexFunc(ex.NodePools, func(v whatif.PoolVerdict) bool { return v.NodePool == pool })
	if i < 0 || !strings.Contains(ex.NodePools[i].Verdict, want) {
		t.Errorf("nodepool %s verdict does not name %s:\n%s", pool, want, out)
	}
}
