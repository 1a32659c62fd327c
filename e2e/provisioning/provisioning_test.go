package provisioning

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/joinery-dev/joinery/e2e/framework"
)

// runningTimeout bounds pending → Running for a batch of pods: the batcher waits up to 10 s,
// launch and registration take about a second each on kwok; the rest is room for a loaded
// 2-core machine.
const runningTimeout = 4 * time.Minute

// group is one Deployment of the workload.
type group struct {
	name     string
	replicas int32
	cpu      string
	memory   string
	// spread adds a zonal topology spread (maxSkew 1, DoNotSchedule) and required hostname
	// anti-affinity to the group's own pods.
	spread bool
}

// TestMixedWorkloadGetsNodesAndRuns is the scenario: 60 pods with mixed requests, one
// group spread over zones with hostname anti-affinity, get nodes and all run; no NodeClaim is
// left without pods; a second scale-up reuses in-flight capacity instead of duplicating it.
func TestMixedWorkloadGetsNodesAndRuns(t *testing.T) {
	pool := framework.UniqueName("prov")
	createGroupNodePool(t, pool, nodePool{name: pool})
	ns := env.Namespace(t) // dumps the cluster's state if the test fails

	groups := []group{
		{name: "small", replicas: 25, cpu: "250m", memory: "256Mi"},
		{name: "medium", replicas: 20, cpu: "1", memory: "2Gi"},
		{name: "spread", replicas: 15, cpu: "500m", memory: "512Mi", spread: true},
	}
	begin := time.Now()
	for _, g := range groups {
		createDeployment(t, ns, pool, g)
	}
	pods := env.AwaitPods(t, ns, "joinery.dev/e2e-group="+pool, 60, runningTimeout, running)
	t.Logf("60 pods pending → Running in %s", time.Since(begin).Round(time.Second))

	checkSpread(t, pods)
	claims := nodeClaimsOf(t, pool)
	checkEveryNodeClaimHostsPods(t, claims, pods)
	t.Logf("first scale-up: %d NodeClaims", len(claims))
	checkNodePoolStatus(t, pool, len(claims))

	// Second scale-up, in two steps inside one batch window: the second step's pods must land
	// on the NodeClaims the first step is launching, not on NodeClaims of their own.
	scale(t, ns, "small", 40)
	scale(t, ns, "small", 55)
	pods = env.AwaitPods(t, ns, "joinery.dev/e2e-group="+pool, 90, runningTimeout, running)
	claims = nodeClaimsOf(t, pool)
	checkEveryNodeClaimHostsPods(t, claims, pods)
	t.Logf("second scale-up: %d NodeClaims", len(claims))
}

func running(pod corev1.Pod) error {
	if pod.Status.Phase != corev1.PodRunning {
		return fmt.Errorf("pod %s is %s", pod.Name, pod.Status.Phase)
	}
	return nil
}

func createDeployment(t *testing.T, ns, pool string, g group) {
	t.Helper()
	labels := map[string]string{"app": g.name, "joinery.dev/e2e-group": pool}
	// Only nodes of this test's NodePool: the suite may share the cluster with others.
	spec := framework.GroupPodSpec(pool, g.cpu, g.memory)
	if g.spread {
		own := &metav1.LabelSelector{MatchLabels: map[string]string{"app": g.name}}
		spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: own,
		}}
		spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelHostname, LabelSelector: own}},
		}}
	}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: g.name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(g.replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
	if _, err := env.Client.AppsV1().Deployments(ns).Create(t.Context(), deploy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment %s: %v", g.name, err)
	}
}

func scale(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	env.ScaleDeployment(t, ns, name, replicas)
}

// checkSpread: the spread group's pods are on distinct nodes and their zones differ by at most
// one pod.
func checkSpread(t *testing.T, pods []corev1.Pod) {
	t.Helper()
	nodes := map[string]bool{}
	zones := map[string]int{}
	for _, pod := range pods {
		if pod.Labels["app"] != "spread" {
			continue
		}
		if nodes[pod.Spec.NodeName] {
			t.Errorf("two spread pods on node %s despite hostname anti-affinity", pod.Spec.NodeName)
		}
		nodes[pod.Spec.NodeName] = true
		node, err := env.Client.CoreV1().Nodes().Get(t.Context(), pod.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get node %s: %v", pod.Spec.NodeName, err)
		}
		zones[node.Labels[corev1.LabelTopologyZone]]++
	}
	lo, hi := -1, 0
	for _, n := range zones {
		if lo < 0 || n < lo {
			lo = n
		}
		hi = max(hi, n)
	}
	if len(zones) < 2 || hi-lo > 1 {
		t.Errorf("spread pods per zone %v: want at least 2 zones and a skew of at most 1", zones)
	}
}

func nodeClaimsOf(t *testing.T, pool string) []unstructured.Unstructured {
	t.Helper()
	list, err := env.Dynamic.Resource(framework.NodeClaims).List(t.Context(), metav1.ListOptions{LabelSelector: "karpenter.sh/nodepool=" + pool})
	if err != nil {
		t.Fatalf("list nodeclaims: %v", err)
	}
	return list.Items
}

// checkEveryNodeClaimHostsPods: capacity bought twice shows up as a NodeClaim whose node runs
// none of the workload's pods.
func checkEveryNodeClaimHostsPods(t *testing.T, claims []unstructured.Unstructured, pods []corev1.Pod) {
	t.Helper()
	if len(claims) == 0 {
		t.Fatal("no NodeClaims for the NodePool")
	}
	perNode := map[string]int{}
	for _, pod := range pods {
		perNode[pod.Spec.NodeName]++
	}
	for _, nc := range claims {
		node, _, _ := unstructured.NestedString(nc.Object, "status", "nodeName")
		if perNode[node] == 0 {
			t.Errorf("NodeClaim %s (node %q, %s) hosts none of the workload's pods", nc.GetName(), node,
				nc.GetLabels()[corev1.LabelInstanceTypeStable])
		}
	}
}

// checkNodePoolStatus waits for the NodePool's status to count its nodes and say it is Ready.
func checkNodePoolStatus(t *testing.T, pool string, nodes int) {
	t.Helper()
	framework.Eventually(t, time.Minute, "status of nodepool "+pool, func(ctx context.Context) (bool, error) {
		np, err := env.Dynamic.Resource(framework.NodePools).Get(ctx, pool, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got, _, _ := unstructured.NestedInt64(np.Object, "status", "nodes")
		if got != int64(nodes) {
			return false, fmt.Errorf("status.nodes = %d, want %d", got, nodes)
		}
		conds, _, _ := unstructured.NestedSlice(np.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Ready" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, fmt.Errorf("nodepool is not Ready: %v", conds)
	})
}
