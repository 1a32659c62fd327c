package overlay

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/apis/karpenter/v1alpha1"
	"github.com/joinery-dev/joinery/e2e/framework"
)

// timeout bounds each wait: launches take a second or two on kwok; the rest is room for a
// loaded 2-core machine.
const timeout = 3 * time.Minute

var nodeOverlays = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1alpha1", Resource: "nodeoverlays"}

// createNodePool creates a kwok NodePool of on-demand c5.large and m5.large whose nodes carry
// the group label.
func createNodePool(t *testing.T, name string) {
	t.Helper()
	env.CreateKWOKNodeClass(t, name)
	env.Create(t, framework.NodePools, fmt.Sprintf(`
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: %[1]q}
spec:
  template:
    metadata:
      labels: {%[2]s: %[1]q}
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: %[1]q}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: kubernetes.io/os, operator: In, values: [linux]}
      - {key: node.kubernetes.io/instance-type, operator: In, values: [c5.large, m5.large]}
`, name, framework.GroupLabel))
}

// createOverlay creates a NodeOverlay that selects the NodePool pool by its label, with spec
// lines (indented two spaces, under spec) added.
func createOverlay(t *testing.T, name, pool, spec string) {
	t.Helper()
	env.Create(t, nodeOverlays, fmt.Sprintf(`
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: %q}
spec:
%s
`, name, strings.ReplaceAll(spec, "$POOL", pool)))
}

// createPod creates a pause pod of the group pool requesting cpu and, when not empty,
// hugepages-2Mi.
func createPod(t *testing.T, ns, pool, name, cpu, hugepages string) {
	t.Helper()
	spec := framework.GroupPodSpec(pool, cpu, "256Mi")
	if hugepages != "" {
		spec.Containers[0].Resources.Requests["hugepages-2Mi"] = resource.MustParse(hugepages)
		spec.Containers[0].Resources.Limits = corev1.ResourceList{"hugepages-2Mi": resource.MustParse(hugepages), corev1.ResourceMemory: resource.MustParse("256Mi")}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: spec}
	if _, err := env.Client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
}

// nodeClaimOf waits until the pod runs and returns the NodeClaim of its node.
func nodeClaimOf(t *testing.T, ns, pod string) karpv1.NodeClaim {
	t.Helper()
	running := env.AwaitPodRunning(t, ns, pod, timeout)
	var nc karpv1.NodeClaim
	framework.Eventually(t, timeout, "the NodeClaim of node "+running.Spec.NodeName, func(ctx context.Context) (bool, error) {
		list, err := env.Dynamic.Resource(framework.NodeClaims).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, item := range list.Items {
			if item.Object["status"] != nil && nestedString(item, "status", "nodeName") == running.Spec.NodeName {
				return true, runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &nc)
			}
		}
		return false, fmt.Errorf("no NodeClaim has node %s", running.Spec.NodeName)
	})
	return nc
}

func nestedString(obj unstructured.Unstructured, fields ...string) string {
	s, _, _ := unstructured.NestedString(obj.Object, fields...)
	return s
}

// awaitReady waits until the overlay's Ready condition has status and reason, and returns it.
func awaitReady(t *testing.T, name string, status metav1.ConditionStatus, reason string) metav1.Condition {
	t.Helper()
	var ready metav1.Condition
	framework.Eventually(t, timeout, fmt.Sprintf("nodeoverlay %s Ready=%s (%s)", name, status, reason), func(ctx context.Context) (bool, error) {
		obj, err := env.Dynamic.Resource(nodeOverlays).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		var o v1alpha1.NodeOverlay
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &o); err != nil {
			return false, err
		}
		cond := meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionTypeReady)
		if cond == nil {
			return false, fmt.Errorf("no Ready condition")
		}
		ready = *cond
		if cond.Status != status || cond.Reason != reason {
			return false, fmt.Errorf("Ready=%s (%s: %s)", cond.Status, cond.Reason, cond.Message)
		}
		return true, nil
	})
	return ready
}

// TestPriceOverlayChangesTheLaunchedType: on-demand c5.large (0.085) is cheaper than m5.large
// (0.096), so a pod gets a c5.large; an overlay pricing m5.large at 0.01 for this NodePool makes
// the next pod's node an m5.large, without a restart, and leaves the first node undrifted.
func TestPriceOverlayChangesTheLaunchedType(t *testing.T) {
	t.Parallel()
	const pool = "ovl-price"
	createNodePool(t, pool)
	ns := env.Namespace(t)

	// 1500m: two such pods never share a 2-cpu node.
	createPod(t, ns, pool, "before", "1500m", "")
	before := nodeClaimOf(t, ns, "before")
	if typ := before.Labels[corev1.LabelInstanceTypeStable]; typ != "c5.large" {
		t.Fatalf("without an overlay launched %s, want c5.large (the cheaper)", typ)
	}

	createOverlay(t, "ovl-price-m5", pool, `
  requirements:
  - {key: karpenter.sh/nodepool, operator: In, values: [$POOL]}
  - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}
  price: "0.01"`)
	awaitReady(t, "ovl-price-m5", metav1.ConditionTrue, v1alpha1.ConditionReasonApplied)

	createPod(t, ns, pool, "after", "1500m", "")
	after := nodeClaimOf(t, ns, "after")
	if typ := after.Labels[corev1.LabelInstanceTypeStable]; typ != "m5.large" {
		t.Errorf("with the overlay launched %s, want m5.large (0.01 by the overlay)", typ)
	}

	// An overlay change does not drift existing NodeClaims (as in Karpenter).
	obj, err := env.Dynamic.Resource(framework.NodeClaims).Get(t.Context(), before.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var nc karpv1.NodeClaim
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &nc); err != nil {
		t.Fatal(err)
	}
	if cond := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDrifted); cond != nil {
		t.Errorf("NodeClaim %s is Drifted after an overlay change: %+v", nc.Name, cond)
	}
}

// TestCapacityOverlayAddsHugepages: no kwok type has hugepages-2Mi, so a pod requesting it
// stays pending with the solver's reason; an overlay adding 1Gi to this NodePool's types gets
// it a node that reports the hugepages.
func TestCapacityOverlayAddsHugepages(t *testing.T) {
	t.Parallel()
	const pool = "ovl-hugepages"
	createNodePool(t, pool)
	ns := env.Namespace(t)

	createPod(t, ns, pool, "huge", "500m", "512Mi")
	wantReason := fmt.Sprintf("nodepool %q: no instance type fits the pod's requests", pool)
	framework.Eventually(t, timeout, "a FailedScheduling event with the solver's reason", func(ctx context.Context) (bool, error) {
		events, err := env.Client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Regarding.Name == "huge" && e.Reason == "FailedScheduling" && strings.Contains(e.Note, wantReason) && strings.Contains(e.Note, "hugepages-2Mi") {
				t.Logf("pending: %s", e.Note)
				return true, nil
			}
		}
		return false, fmt.Errorf("no FailedScheduling event saying %q about hugepages-2Mi among %d events", wantReason, len(events.Items))
	})
	if ncs, err := env.Dynamic.Resource(framework.NodeClaims).List(t.Context(), metav1.ListOptions{LabelSelector: karpv1.NodePoolLabelKey + "=" + pool}); err != nil {
		t.Fatal(err)
	} else if len(ncs.Items) != 0 {
		t.Fatalf("%d NodeClaims launched without the overlay, want none", len(ncs.Items))
	}

	createOverlay(t, "ovl-hugepages", pool, `
  requirements:
  - {key: karpenter.sh/nodepool, operator: In, values: [$POOL]}
  capacity:
    hugepages-2Mi: 1Gi`)
	nc := nodeClaimOf(t, ns, "huge")
	node, err := env.Client.CoreV1().Nodes().Get(t.Context(), nc.Status.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if q := node.Status.Allocatable["hugepages-2Mi"]; q.Cmp(resource.MustParse("1Gi")) != 0 {
		t.Errorf("node %s allocatable hugepages-2Mi = %s, want the overlay's 1Gi", node.Name, q.String())
	}
}

// TestConflictingOverlays: two overlays of one weight price this NodePool's m5.large
// differently; the alphabetically first wins and stays Ready, the other is Ready=False with
// reason Conflict naming the winner.
func TestConflictingOverlays(t *testing.T) {
	t.Parallel()
	const pool = "ovl-conflict"
	createNodePool(t, pool)
	for name, price := range map[string]string{"ovl-conflict-b": "0.02", "ovl-conflict-a": "0.01"} {
		createOverlay(t, name, pool, `
  weight: 10
  requirements:
  - {key: karpenter.sh/nodepool, operator: In, values: [$POOL]}
  - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}
  price: "`+price+`"`)
	}
	lost := awaitReady(t, "ovl-conflict-b", metav1.ConditionFalse, v1alpha1.ConditionReasonConflict)
	if !strings.Contains(lost.Message, "ovl-conflict-a") {
		t.Errorf("Conflict message %q does not name ovl-conflict-a", lost.Message)
	}
	awaitReady(t, "ovl-conflict-a", metav1.ConditionTrue, v1alpha1.ConditionReasonApplied)
}
