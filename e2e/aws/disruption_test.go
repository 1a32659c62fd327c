package aws

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/joinery-dev/joinery/e2e/framework"
	"github.com/joinery-dev/joinery/internal/awsemulator"
)

// replaceTimeout bounds a disruption decision → the old instance terminated and its
// replacement running: a loop pass (10 s), validation (5 s), a launch and the drain.
const replaceTimeout = 3 * time.Minute

// enableDisruption lifts the suite's budgets nodes: 0 on the NodePool.
func enableDisruption(t *testing.T, pool string) {
	t.Helper()
	patch := `{"spec": {"disruption": {"budgets": [{"nodes": "100%"}]}}}`
	if _, err := env.Dynamic.Resource(framework.NodePools).Patch(t.Context(), pool, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch nodepool %s: %v", pool, err)
	}
}

// awaitReplaced waits until old's instance is terminated and the NodePool has one live
// instance, whose NodeClaim is Ready, and returns that instance.
func awaitReplaced(t *testing.T, pool string, old awsemulator.Instance) awsemulator.Instance {
	t.Helper()
	var replacement awsemulator.Instance
	framework.Eventually(t, replaceTimeout, "instance "+old.ID+" replaced", func(ctx context.Context) (bool, error) {
		all := instancesOf(t, pool)
		i := slices.IndexFunc(all, func(inst awsemulator.Instance) bool { return inst.ID == old.ID })
		if i >= 0 && all[i].State != awsemulator.InstanceStateTerminated && all[i].State != awsemulator.InstanceStateShuttingDown {
			return false, fmt.Errorf("old instance %s is %s", old.ID, all[i].State)
		}
		running := live(all)
		if len(running) != 1 {
			return false, fmt.Errorf("%d live instances", len(running))
		}
		replacement = running[0]
		return true, nil
	})
	nodeClaimsOf(t, pool, 1)
	return replacement
}

// TestDriftedInstanceIsReplacedFromTheCurrentAMI: the al2023@latest alias moves to another
// image, the NodeClaim is marked AMIDrift; once the NodePool's budget allows, the disruption
// controller launches a replacement from the new image, waits for it, and terminates the old
// instance; the workload's pod runs on the new node.
func TestDriftedInstanceIsReplacedFromTheCurrentAMI(t *testing.T) {
	admin := emulator(t)
	env.RequireLocal(t)
	pool := framework.UniqueName("redrift")
	createNodeClass(t, pool)
	createNodePool(t, pool, pool,
		`{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}`,
		`{key: kubernetes.io/arch, operator: In, values: [amd64]}`,
		`{key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}`)
	ns := env.Namespace(t)
	createDeployment(t, ns, pool, 1, "500m")
	env.AwaitPods(t, ns, groupLabel+"="+pool, 1, runningTimeout, running)
	nodeClaimsOf(t, pool, 1)
	instances := live(instancesOf(t, pool))
	if len(instances) != 1 {
		t.Fatalf("%d live instances, want 1", len(instances))
	}
	old := instances[0]

	cfg := emulatorConfig(t)
	latest := fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/x86_64/standard/recommended/image_id", kubernetesVersion(t))
	current, err := ssm.NewFromConfig(cfg).GetParameter(t.Context(), &ssm.GetParameterInput{Name: awssdk.String(latest)})
	if err != nil {
		t.Fatalf("reading %s: %v", latest, err)
	}
	if got := awssdk.ToString(current.Parameter.Value); got != old.ImageID {
		t.Fatalf("the instance runs %s but %s names %s", old.ImageID, latest, got)
	}
	newImage := otherImage(t, cfg, old.ImageID)
	if err := admin.PutParameter(t.Context(), latest, newImage); err != nil {
		t.Fatalf("moving %s: %v", latest, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := admin.PutParameter(ctx, latest, old.ImageID); err != nil {
			t.Errorf("restoring %s: %v", latest, err)
		}
	})
	patch := fmt.Sprintf(`{"metadata": {"annotations": {"joinery.dev/e2e-refresh": %q}}}`, time.Now().Format(time.RFC3339Nano))
	if _, err := env.Dynamic.Resource(framework.EC2NodeClasses).Patch(t.Context(), pool, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("annotating ec2nodeclass %s: %v", pool, err)
	}
	env.AwaitNodeClaims(t, "karpenter.sh/nodepool="+pool, 1, driftTimeout, func(nc unstructured.Unstructured) error {
		if cond := condition(nc, "Drifted"); cond == nil || cond["status"] != "True" || cond["reason"] != "AMIDrift" {
			return fmt.Errorf("Drifted = %v, want True with AMIDrift", cond)
		}
		return nil
	})

	enableDisruption(t, pool)
	replacement := awaitReplaced(t, pool, old)
	if replacement.ImageID != newImage {
		t.Errorf("replacement %s runs %s, want the alias's new image %s", replacement.ID, replacement.ImageID, newImage)
	}
	env.AwaitPods(t, ns, groupLabel+"="+pool, 1, runningTimeout, func(p corev1.Pod) error {
		if err := running(p); err != nil {
			return err
		}
		if node := nodeByProviderID(t, providerID(replacement)); p.Spec.NodeName != node.Name {
			return fmt.Errorf("pod on %s, want the replacement's node %s", p.Spec.NodeName, node.Name)
		}
		return nil
	})
}

// TestExpiredInstanceIsReplaced: with expireAfter 30s the NodeClaim is deleted when it
// expires (no budget applies), its instance terminated, and the pod's new NodeClaim launches
// a new instance.
func TestExpiredInstanceIsReplaced(t *testing.T) {
	emulator(t)
	env.RequireLocal(t)
	pool := framework.UniqueName("expire")
	createNodeClass(t, pool)
	createNodePool(t, pool, pool, `{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}`)
	patch := `{"spec": {"template": {"spec": {"expireAfter": "30s"}}}}`
	if _, err := env.Dynamic.Resource(framework.NodePools).Patch(t.Context(), pool, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch nodepool %s: %v", pool, err)
	}
	ns := env.Namespace(t)
	createDeployment(t, ns, pool, 1, "500m")
	env.AwaitPods(t, ns, groupLabel+"="+pool, 1, runningTimeout, running)
	instances := live(instancesOf(t, pool))
	if len(instances) != 1 {
		t.Fatalf("%d live instances, want 1", len(instances))
	}
	replacement := awaitReplaced(t, pool, instances[0])
	if replacement.ID == instances[0].ID {
		t.Fatalf("instance %s not replaced", replacement.ID)
	}
}
