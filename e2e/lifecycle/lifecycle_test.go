package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/joinery-dev/joinery/e2e/framework"
)

// readyTimeout bounds NodeClaim created → Ready: kwok and the controller each react within a
// second; the rest is room for a loaded 2-core machine.
const readyTimeout = 60 * time.Second

var lifecycleConds = []string{"Launched", "Registered", "Initialized", "Ready"}

func TestNodeClaimLaunchesRegistersInitializesAndTerminates(t *testing.T) {
	name := framework.UniqueName("lifecycle")
	env.CreateKWOKNodeClass(t, name)
	env.Create(t, framework.NodePools, fmt.Sprintf(`
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: %[1]q}
spec:
  disruption: {budgets: [{nodes: "0"}]} # no voluntary disruption of the NodeClaim under test
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: %[1]q}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
`, name))

	begin := time.Now()
	env.Create(t, framework.NodeClaims, fmt.Sprintf(`
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: %[1]q
  labels: {karpenter.sh/nodepool: %[1]q, joinery.dev/e2e-test: %[1]q}
spec:
  nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: %[1]q}
  taints:
  - {key: example.com/dedicated, value: lifecycle, effect: NoSchedule}
  requirements:
  - {key: karpenter.sh/nodepool, operator: In, values: [%[1]q]}
  - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, c5.large, r5.large]}
  - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
  resources:
    requests: {cpu: 500m, memory: 1Gi}
`, name))

	selector := "joinery.dev/e2e-test=" + name
	claims := env.AwaitNodeClaims(t, selector, 1, readyTimeout, func(nc unstructured.Unstructured) error {
		for _, cond := range lifecycleConds {
			if err := framework.NodeClaimCondition(cond, "True")(nc); err != nil {
				return err
			}
		}
		return nil
	})
	t.Logf("NodeClaim created → Ready in %s", time.Since(begin).Round(time.Millisecond))

	nc := claims[0]
	labels := nc.GetLabels()
	if it := labels["node.kubernetes.io/instance-type"]; !slices.Contains([]string{"m5.large", "c5.large", "r5.large"}, it) {
		t.Errorf("NodeClaim instance type %q, want one of the requirement's", it)
	}
	if labels["karpenter.sh/capacity-type"] != "on-demand" || labels["topology.kubernetes.io/zone"] == "" {
		t.Errorf("NodeClaim labels %v lack the launch's capacity type or zone", labels)
	}
	if !slices.Contains(nc.GetFinalizers(), "karpenter.sh/termination") {
		t.Errorf("NodeClaim finalizers = %v", nc.GetFinalizers())
	}
	providerID, _, _ := unstructured.NestedString(nc.Object, "status", "providerID")
	nodeName, _, _ := unstructured.NestedString(nc.Object, "status", "nodeName")
	if providerID != "kwok://"+name || nodeName != name {
		t.Errorf("status providerID %q nodeName %q", providerID, nodeName)
	}

	node := env.AwaitNodeReady(t, nodeName, readyTimeout)
	checkNode(t, node, nc)
	checkEvents(t, name)

	// kubectl delete nodeclaim: the Node and the NodeClaim go away.
	begin = time.Now()
	if err := env.Dynamic.Resource(framework.NodeClaims).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete nodeclaim: %v", err)
	}
	framework.AwaitGone(t, readyTimeout, "node "+nodeName, func(ctx context.Context) error {
		_, err := env.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		return err
	})
	framework.AwaitGone(t, readyTimeout, "nodeclaim "+name, func(ctx context.Context) error {
		_, err := env.Dynamic.Resource(framework.NodeClaims).Get(ctx, name, metav1.GetOptions{})
		return err
	})
	t.Logf("NodeClaim deleted → Node and NodeClaim gone in %s", time.Since(begin).Round(time.Millisecond))
}

// checkNode verifies the registration's work on the Node.
func checkNode(t *testing.T, node *corev1.Node, nc unstructured.Unstructured) {
	t.Helper()
	for key, want := range map[string]string{
		"karpenter.sh/registered":          "true",
		"karpenter.sh/initialized":         "true",
		"karpenter.sh/nodepool":            nc.GetLabels()["karpenter.sh/nodepool"],
		"node.kubernetes.io/instance-type": nc.GetLabels()["node.kubernetes.io/instance-type"],
		"joinery.dev/e2e-test":             nc.GetName(),
	} {
		if node.Labels[key] != want {
			t.Errorf("node label %s = %q, want %q", key, node.Labels[key], want)
		}
	}
	if !slices.Contains(node.Finalizers, "karpenter.sh/termination") {
		t.Errorf("node finalizers = %v", node.Finalizers)
	}
	if len(node.OwnerReferences) != 1 || node.OwnerReferences[0].Kind != "NodeClaim" || node.OwnerReferences[0].UID != nc.GetUID() {
		t.Errorf("node owner references = %v", node.OwnerReferences)
	}
	var dedicated bool
	for _, taint := range node.Spec.Taints {
		if taint.Key == "karpenter.sh/unregistered" {
			t.Errorf("node still has the unregistered taint: %v", node.Spec.Taints)
		}
		dedicated = dedicated || (taint.Key == "example.com/dedicated" && taint.Effect == corev1.TaintEffectNoSchedule)
	}
	if !dedicated {
		t.Errorf("node taints %v lack the NodeClaim's taint", node.Spec.Taints)
	}
}

// checkEvents waits for the NodeClaim's condition-transition events, worded as in Karpenter.
func checkEvents(t *testing.T, name string) {
	t.Helper()
	framework.Eventually(t, 2*time.Minute, "events of nodeclaim "+name, func(ctx context.Context) (bool, error) {
		list, err := env.Client.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.kind=NodeClaim,involvedObject.name=" + name,
		})
		if err != nil {
			return false, err
		}
		notes := map[string]string{}
		for _, ev := range list.Items {
			notes[ev.Reason] = ev.Message
		}
		for _, cond := range lifecycleConds {
			want := fmt.Sprintf("Status condition transitioned, Type: %s, Status: Unknown -> True, Reason: %s", cond, cond)
			if notes[cond] != want {
				return false, fmt.Errorf("event %s = %q, want %q (have %v)", cond, notes[cond], want, notes)
			}
		}
		return true, nil
	})
}
