package outoftree

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/e2e/framework"
)

// timeout bounds each wait: batching, launches on kwok and the disruption loop's passes take
// seconds; the rest is room for a loaded 2-core machine.
const timeout = 4 * time.Minute

// podCPU is small enough that every capped pod of a test fits on one c5.large by resources:
// only the plugin keeps them apart.
const podCPU = "100m"

// TestProvisioningPlansTheNodesThePluginImplies: 6 capped pods, at most 2 per node, each
// small enough that all would fit on one c5.large. The Provisioner plans with the plugin's
// Filter, so it launches 3 nodes in one go (not 1, which the scheduler would then refuse),
// and every pod runs, at most 2 to a node.
func TestProvisioningPlansTheNodesThePluginImplies(t *testing.T) {
	env.RequireLocal(t) // the suite's binaries run only on the local cluster
	t.Parallel()
	const pods = 6
	pool := framework.UniqueName("capped")
	createNodePool(t, pool, `  disruption: {budgets: [{nodes: "0"}]}`)
	ns := env.Namespace(t)
	createDeployment(t, ns, pool, "capped", pods)

	running := env.AwaitPods(t, ns, "app=capped", pods, timeout, isRunning)
	checkCap(t, running)
	want := (pods + maxPerNode - 1) / maxPerNode
	if ncs := nodeClaims(t, pool); len(ncs) != want {
		t.Errorf("%d NodeClaims for %d pods of at most %d per node, want %d: %s", len(ncs), pods, maxPerNode, want, names(ncs))
	}
}

// TestConsolidationNeverMergesPastThePlugin: 8 capped pods run 2 to a node on 4 nodes, then
// the Deployment scales to 5. By resources all 5 fit on one node, but the plugin allows 2 per
// node: consolidation removes exactly one node (4 → 3), never merges the pods further, and no
// pod is left Pending. The loop then keeps passing over the 3 nodes without a command.
func TestConsolidationNeverMergesPastThePlugin(t *testing.T) {
	env.RequireLocal(t)
	t.Parallel()
	const before, after = 8, 5
	pool := framework.UniqueName("merge")
	createNodePool(t, pool, `  disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 5s, budgets: [{nodes: "100%"}]}`)
	ns := env.Namespace(t)
	createDeployment(t, ns, pool, "capped", before)
	checkCap(t, env.AwaitPods(t, ns, "app=capped", before, timeout, isRunning))
	var launched []karpv1.NodeClaim
	framework.Eventually(t, timeout, fmt.Sprintf("%d NodeClaims, %d capped pods each", before/maxPerNode, maxPerNode), func(ctx context.Context) (bool, error) {
		var err error
		if launched, err = listNodeClaims(ctx, pool); err != nil {
			return false, err
		}
		return len(launched) == before/maxPerNode, fmt.Errorf("%d NodeClaims: %s", len(launched), names(launched))
	})
	const disruptedTotal = "karpenter_nodeclaims_disrupted_total"
	disruptedBefore, err := env.ControllerMetric(t.Context(), disruptedTotal, fmt.Sprintf("nodepool=%q", pool))
	if err != nil {
		t.Fatal(err)
	}

	scale(t, ns, "capped", after)
	fewest := (after + maxPerNode - 1) / maxPerNode
	framework.Eventually(t, timeout, fmt.Sprintf("consolidated to %d NodeClaims", fewest), func(ctx context.Context) (bool, error) {
		ncs, err := listNodeClaims(ctx, pool)
		if err != nil {
			return false, err
		}
		return len(ncs) == fewest, fmt.Errorf("%d NodeClaims: %s", len(ncs), names(ncs))
	})

	// Let the loop pass over the consolidated nodes a few more times: each pass simulates
	// moving their pods and must find the plugin refusing every move.
	const evaluation = "karpenter_voluntary_disruption_decision_evaluation_duration_seconds_count"
	passes, err := env.ControllerMetric(t.Context(), evaluation, `consolidation_type="single"`)
	if err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, timeout, "three more single-node consolidation passes", func(ctx context.Context) (bool, error) {
		v, err := env.ControllerMetric(ctx, evaluation, `consolidation_type="single"`)
		return err == nil && v >= passes+3, err
	})

	pods := env.AwaitPods(t, ns, "app=capped", after, timeout, isRunning)
	checkCap(t, pods)
	ncs := nodeClaims(t, pool)
	if len(ncs) != fewest {
		t.Errorf("%d NodeClaims after the passes, want %d: %s", len(ncs), fewest, names(ncs))
	}
	// Nothing was launched to make room: the removed node's pod moved onto a node with a slot.
	initial := map[string]bool{}
	for _, nc := range launched {
		initial[nc.Name] = true
	}
	for _, nc := range ncs {
		if !initial[nc.Name] {
			t.Errorf("NodeClaim %s was launched after the scale-down: consolidation moved pods the plugin refused", nc.Name)
		}
	}
	disrupted, err := env.ControllerMetric(t.Context(), disruptedTotal, fmt.Sprintf("nodepool=%q", pool))
	if err != nil {
		t.Fatal(err)
	}
	if n := int(disrupted - disruptedBefore); n != before/maxPerNode-fewest {
		t.Errorf("%d NodeClaims disrupted after the scale-down, want %d", n, before/maxPerNode-fewest)
	}
}

// createNodePool creates a kwok NodePool of c5.large on-demand nodes labelled with the group,
// with spec lines (indented two spaces) under spec.
func createNodePool(t *testing.T, name, spec string) {
	t.Helper()
	env.CreateKWOKNodeClass(t, name)
	env.Create(t, framework.NodePools, fmt.Sprintf(`
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: %[1]q}
spec:
%[2]s
  template:
    metadata:
      labels: {%[3]s: %[1]q}
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: %[1]q}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: kubernetes.io/os, operator: In, values: [linux]}
      - {key: node.kubernetes.io/instance-type, operator: In, values: [c5.large]}
`, name, spec, framework.GroupLabel))
}

// createDeployment creates replicas capped pods of podCPU that run only on the pool's nodes.
func createDeployment(t *testing.T, ns, pool, name string, replicas int32) {
	t.Helper()
	labels := map[string]string{"app": name, framework.GroupLabel: pool, cappedLabel: "true"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: framework.GroupPodSpec(pool, podCPU, "128Mi")},
		},
	}
	if _, err := env.Client.AppsV1().Deployments(ns).Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment %s: %v", name, err)
	}
}

func scale(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec": {"replicas": %d}}`, replicas)
	if _, err := env.Client.AppsV1().Deployments(ns).Patch(t.Context(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("scale %s: %v", name, err)
	}
}

func isRunning(pod corev1.Pod) error {
	if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
		return fmt.Errorf("pod %s is %s", pod.Name, pod.Status.Phase)
	}
	return nil
}

// checkCap: no node runs more capped pods than the plugin allows.
func checkCap(t *testing.T, pods []corev1.Pod) {
	t.Helper()
	perNode := map[string]int{}
	for _, p := range pods {
		perNode[p.Spec.NodeName]++
	}
	for node, n := range perNode {
		if n > maxPerNode {
			t.Errorf("node %s runs %d capped pods, the plugin allows %d", node, n, maxPerNode)
		}
	}
}

// listNodeClaims lists the NodePool's live NodeClaims (not being deleted).
func listNodeClaims(ctx context.Context, pool string) ([]karpv1.NodeClaim, error) {
	list, err := env.Dynamic.Resource(framework.NodeClaims).List(ctx, metav1.ListOptions{LabelSelector: karpv1.NodePoolLabelKey + "=" + pool})
	if err != nil {
		return nil, err
	}
	var out []karpv1.NodeClaim
	for _, item := range list.Items {
		data, err := json.Marshal(item.Object)
		if err != nil {
			return nil, err
		}
		var nc karpv1.NodeClaim
		if err := json.Unmarshal(data, &nc); err != nil {
			return nil, err
		}
		if nc.DeletionTimestamp == nil {
			out = append(out, nc)
		}
	}
	return out, nil
}

func nodeClaims(t *testing.T, pool string) []karpv1.NodeClaim {
	t.Helper()
	ncs, err := listNodeClaims(t.Context(), pool)
	if err != nil {
		t.Fatal(err)
	}
	return ncs
}

func names(ncs []karpv1.NodeClaim) string {
	var out []string
	for _, nc := range ncs {
		out = append(out, nc.Name)
	}
	return strings.Join(out, ", ")
}
