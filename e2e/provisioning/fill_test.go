package provisioning

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/joinery-dev/joinery/e2e/framework"
	"github.com/joinery-dev/joinery/internal/localcluster"
)

const (
	// fillReplicas is the scale-up of TestScaleUpFillsItsNodeClaims.
	fillReplicas = 150
	// fillLeastShare is issue 24's bar: no NodeClaim's node ends with its pods requesting less
	// than this share of it.
	fillLeastShare = 0.25
)

// TestScaleUpFillsItsNodeClaims (issue 24) is the live benchmark's zone-spread scale-up at a
// smaller scale: a Deployment of 150 zone-spread pods (maxSkew 1, DoNotSchedule), which the
// ReplicaSet controller creates in growing bursts over seconds, so joinery plans it in several
// batches. Later batches must fill the capacity earlier ones bought — planned for the replicas
// not created yet, or still launching, or initialized meanwhile — instead of buying small
// NodeClaims beside it: every pod runs, the spread holds, no NodeClaim's node ends with under
// 25 % of it requested, and there are at most 10 % more NodeClaims (rounded up) than one
// offline plan of all 150 pods.
func TestScaleUpFillsItsNodeClaims(t *testing.T) {
	env.RequireLocal(t)
	pool := framework.UniqueName("fill")
	createGroupNodePool(t, pool, nodePool{name: pool})
	ns := env.Namespace(t)
	labels := map[string]string{"app": "fill", framework.GroupLabel: pool}
	spec := framework.GroupPodSpec(pool, "250m", "256Mi")
	spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "fill"}},
	}}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}

	config, err := localcluster.SchedulerConfig(env.Cluster.KubeconfigPath(), false)
	if err != nil {
		t.Fatal(err)
	}
	configPath := filepath.Join(t.TempDir(), "scheduler.yaml")
	if err := os.WriteFile(configPath, config, 0o600); err != nil {
		t.Fatal(err)
	}
	bound := singleBatchNodeClaims(t, configPath, ns, pool, []string{"fill"}, map[string]corev1.PodTemplateSpec{"fill": template}, fillReplicas)
	allowed := int(math.Ceil(float64(bound) * 1.1))
	t.Logf("one batch of all %d pods plans %d NodeClaims; allowed %d", fillReplicas, bound, allowed)

	record := recordNodeClaims(t, pool)
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "fill", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](fillReplicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: template,
		},
	}
	if _, err := env.Client.AppsV1().Deployments(ns).Create(t.Context(), deploy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	pods := env.AwaitPods(t, ns, framework.GroupLabel+"="+pool, fillReplicas, runningTimeout, running)

	// Zones: maxSkew 1, as the Filters decide.
	zones := map[string]int{}
	for _, pod := range pods {
		node, err := env.Client.CoreV1().Nodes().Get(t.Context(), pod.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get node %s: %v", pod.Spec.NodeName, err)
		}
		zones[node.Labels[corev1.LabelTopologyZone]]++
	}
	lo, hi := fillReplicas, 0
	for _, n := range zones {
		lo, hi = min(lo, n), max(hi, n)
	}
	if hi-lo > 1 {
		t.Errorf("pods per zone %v: skew %d, want at most 1", zones, hi-lo)
	}

	// Every NodeClaim's node is there and its pods request at least a quarter of it.
	var claims []unstructured.Unstructured
	framework.Eventually(t, runningTimeout, "every NodeClaim of "+pool+" with its node", func(context.Context) (bool, error) {
		claims = nodeClaimsOf(t, pool)
		for _, nc := range claims {
			if node, _, _ := unstructured.NestedString(nc.Object, "status", "nodeName"); node == "" {
				return false, fmt.Errorf("NodeClaim %s has no node yet", nc.GetName())
			}
		}
		return true, nil
	})
	nodes, err := env.Client.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{LabelSelector: framework.GroupLabel + "=" + pool})
	if err != nil {
		t.Fatalf("list nodes: %v", err)
	}
	all, err := env.Client.CoreV1().Pods(metav1.NamespaceAll).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	shares := framework.RequestedShares(nodes.Items, all.Items)
	for _, nc := range claims {
		node, _, _ := unstructured.NestedString(nc.Object, "status", "nodeName")
		if share := shares[node]; share < fillLeastShare {
			t.Errorf("NodeClaim %s (node %s, %s): its pods request %.0f %% of it, under %.0f %%", nc.GetName(), node,
				nc.GetLabels()[corev1.LabelInstanceTypeStable], 100*share, 100*fillLeastShare)
		}
	}
	record.mu.Lock()
	defer record.mu.Unlock()
	if record.err != nil {
		t.Fatal(record.err)
	}
	t.Logf("%d NodeClaims created for %d pods; one batch would plan %d", len(record.planned), fillReplicas, bound)
	if len(record.planned) > allowed {
		t.Errorf("%d NodeClaims created, more than one offline plan's %d + 10 %% (%d)", len(record.planned), bound, allowed)
	}
}
