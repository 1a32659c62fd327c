package provisioning

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/joinery-dev/joinery/e2e/framework"
)

// nodePool describes a test NodePool; every NodePool of a test labels its nodes with the test's
// group, which the test's pods select, so tests sharing the cluster never share capacity.
type nodePool struct {
	name   string
	weight int
	taint  string // key of a NoSchedule taint, if any
	cpu    string // spec.limits.cpu, if any
	// terminationGracePeriod is spec.template.spec.terminationGracePeriod, if any.
	terminationGracePeriod string
	// instanceTypes, if any, are the only instance types the NodePool allows.
	instanceTypes []string
}

// createGroupNodePool creates np and its KWOKNodeClass; its nodes carry the label
// joinery.dev/e2e-group=group.
func createGroupNodePool(t *testing.T, group string, np nodePool) {
	t.Helper()
	env.CreateKWOKNodeClass(t, np.name)
	var extra, templateSpec string // extra: spec fields; templateSpec: spec.template.spec fields
	if np.weight > 0 {
		extra += fmt.Sprintf("  weight: %d\n", np.weight)
	}
	if np.cpu != "" {
		extra += fmt.Sprintf("  limits: {cpu: %q}\n", np.cpu)
	}
	if np.taint != "" {
		templateSpec = fmt.Sprintf("      taints: [{key: %s, value: \"true\", effect: NoSchedule}]\n", np.taint)
	}
	if np.terminationGracePeriod != "" {
		templateSpec += fmt.Sprintf("      terminationGracePeriod: %s\n", np.terminationGracePeriod)
	}
	requirements := ""
	if len(np.instanceTypes) > 0 {
		requirements = fmt.Sprintf("      - {key: node.kubernetes.io/instance-type, operator: In, values: [%s]}\n", strings.Join(np.instanceTypes, ", "))
	}
	env.Create(t, framework.NodePools, fmt.Sprintf(`
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: %[1]q}
spec:
  # Provisioning is under test; voluntary disruption (e2e/disruption) is not.
  disruption: {budgets: [{nodes: "0"}]}
%[3]s  template:
    metadata:
      labels: {joinery.dev/e2e-group: %[2]q}
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: %[1]q}
%[4]s      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: kubernetes.io/os, operator: In, values: [linux]}
%[5]s`, np.name, group, extra, templateSpec, requirements))
}

// createGroupPods creates n pods of the group requesting cpu each, tolerating taint if set.
func createGroupPods(t *testing.T, ns, group string, n int, cpu, toleration string) {
	t.Helper()
	for i := range n {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", group, i), Namespace: ns, Labels: map[string]string{"joinery.dev/e2e-group": group}},
			Spec:       framework.GroupPodSpec(group, cpu, "256Mi"),
		}
		if toleration != "" {
			pod.Spec.Tolerations = []corev1.Toleration{{Key: toleration, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
		}
		if _, err := env.Client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s: %v", pod.Name, err)
		}
	}
}

// nodePoolsOfRunningPods returns, per pod of the group, the NodePool of the node it runs on.
func nodePoolsOfRunningPods(t *testing.T, ns, group string, n int) map[string]string {
	t.Helper()
	pods := env.AwaitPods(t, ns, "joinery.dev/e2e-group="+group, n, runningTimeout, running)
	out := map[string]string{}
	for _, pod := range pods {
		node, err := env.Client.CoreV1().Nodes().Get(t.Context(), pod.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get node %s: %v", pod.Spec.NodeName, err)
		}
		out[pod.Name] = node.Labels["karpenter.sh/nodepool"]
	}
	return out
}

// TestHeavierNodePoolWins: of two NodePools that can host a pod, the one with the higher weight
// provisions it.
func TestHeavierNodePoolWins(t *testing.T) {
	group := framework.UniqueName("weight")
	// Named so that name order would pick the lighter one: only weight picks the heavier.
	light, heavy := group+"-a-light", group+"-z-heavy"
	createGroupNodePool(t, group, nodePool{name: light, weight: 10})
	createGroupNodePool(t, group, nodePool{name: heavy, weight: 90})
	ns := env.Namespace(t)
	createGroupPods(t, ns, group, 2, "500m", "")
	for pod, pool := range nodePoolsOfRunningPods(t, ns, group, 2) {
		if pool != heavy {
			t.Errorf("pod %s runs on a node of NodePool %q, want the heavier %q", pod, pool, heavy)
		}
	}
}

// TestUntoleratedTaintSkipsNodePool: a pod that does not tolerate the heavier NodePool's taint
// gets a node from the lighter one; a pod that tolerates it gets the heavier one.
func TestUntoleratedTaintSkipsNodePool(t *testing.T) {
	group := framework.UniqueName("taint")
	tainted, plain := group+"-tainted", group+"-plain"
	createGroupNodePool(t, group, nodePool{name: tainted, weight: 90, taint: "example.com/dedicated"})
	createGroupNodePool(t, group, nodePool{name: plain, weight: 10})
	ns := env.Namespace(t)
	createGroupPods(t, ns, group, 1, "500m", "")
	if got := nodePoolsOfRunningPods(t, ns, group, 1)[group+"-0"]; got != plain {
		t.Errorf("intolerant pod runs on NodePool %q, want %q", got, plain)
	}

	tolerant := framework.UniqueName("tolerant")
	createGroupNodePool(t, tolerant, nodePool{name: tolerant + "-tainted", weight: 90, taint: "example.com/dedicated"})
	createGroupNodePool(t, tolerant, nodePool{name: tolerant + "-plain", weight: 10})
	createGroupPods(t, ns, tolerant, 1, "500m", "example.com/dedicated")
	if got := nodePoolsOfRunningPods(t, ns, tolerant, 1)[tolerant+"-0"]; got != tolerant+"-tainted" {
		t.Errorf("tolerant pod runs on NodePool %q, want %q", got, tolerant+"-tainted")
	}
}

// TestNodePoolWithoutInstanceTypes: a NodePool whose requirements name no instance type of
// the catalog gets Karpenter's NoCompatibleInstanceTypes Warning from joinery-scheduler (under
// its least-privilege identity) once a pod of the group is planned, and the pod gets its node
// from the lighter NodePool.
func TestNodePoolWithoutInstanceTypes(t *testing.T) {
	group := framework.UniqueName("notypes")
	empty, plain := group+"-empty", group+"-plain"
	createGroupNodePool(t, group, nodePool{name: empty, weight: 90, instanceTypes: []string{"no-such-type"}})
	createGroupNodePool(t, group, nodePool{name: plain, weight: 10})
	ns := env.Namespace(t)
	createGroupPods(t, ns, group, 1, "500m", "")
	if got := nodePoolsOfRunningPods(t, ns, group, 1)[group+"-0"]; got != plain {
		t.Errorf("pod runs on NodePool %q, want %q", got, plain)
	}
	const want = "NodePool requirements filtered out all compatible available instance types"
	framework.Eventually(t, runningTimeout, "NoCompatibleInstanceTypes on NodePool "+empty, func(ctx context.Context) (bool, error) {
		// Events about cluster-scoped objects live in the default namespace.
		events, err := env.Client.EventsV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{FieldSelector: "reason=NoCompatibleInstanceTypes,regarding.name=" + empty})
		if err != nil {
			return false, err
		}
		for _, ev := range events.Items {
			if ev.Regarding.Kind == "NodePool" && ev.Type == corev1.EventTypeWarning && ev.Note == want {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d NoCompatibleInstanceTypes events, none a Warning on the NodePool saying %q", len(events.Items), want)
	})
}

// TestNodePoolLimitsCapCapacity: a NodePool limited to 4 cpu launches no more than that; the
// pods that do not fit stay pending and say why.
func TestNodePoolLimitsCapCapacity(t *testing.T) {
	group := framework.UniqueName("limits")
	createGroupNodePool(t, group, nodePool{name: group, cpu: "4"})
	ns := env.Namespace(t)
	createGroupPods(t, ns, group, 6, "1", "")

	framework.Eventually(t, runningTimeout, "pods of a limited NodePool to settle", func(ctx context.Context) (bool, error) {
		pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "joinery.dev/e2e-group=" + group})
		if err != nil {
			return false, err
		}
		var runningPods, explained int
		for _, pod := range pods.Items {
			if pod.Status.Phase == corev1.PodRunning {
				runningPods++
				continue
			}
			for _, c := range pod.Status.Conditions {
				if c.Type == corev1.PodScheduled && strings.Contains(c.Message, "no NodePool fits") {
					explained++
				}
			}
		}
		if runningPods == 0 || runningPods+explained != len(pods.Items) {
			return false, fmt.Errorf("%d running, %d pending with a reason, of %d", runningPods, explained, len(pods.Items))
		}
		return true, nil
	})

	// Settled. One more pod like the others makes the plugin plan a batch after everything
	// above was decided; its FailedScheduling event says the NodePool has no room left (so
	// that batch saw the limit reached, and every earlier batch's NodeClaims exist), and the
	// NodeClaims stay within the limit.
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: group + "-probe", Namespace: ns, Labels: map[string]string{"joinery.dev/e2e-group": group}},
		Spec:       framework.GroupPodSpec(group, "1", "256Mi"),
	}
	if _, err := env.Client.CoreV1().Pods(ns).Create(t.Context(), probe, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", probe.Name, err)
	}
	framework.Eventually(t, runningTimeout, "pod "+probe.Name+" reported unschedulable by the plugin", func(ctx context.Context) (bool, error) {
		events, err := env.Client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		var notes []string
		for _, ev := range events.Items {
			if ev.Regarding.Name != probe.Name || ev.Reason != "FailedScheduling" {
				continue
			}
			if strings.Contains(ev.Note, "no NodePool fits") {
				return true, nil
			}
			notes = append(notes, ev.Note)
		}
		return false, fmt.Errorf("FailedScheduling events of the pod: %q", notes)
	})
	list, err := env.Dynamic.Resource(framework.NodeClaims).List(t.Context(), metav1.ListOptions{LabelSelector: "karpenter.sh/nodepool=" + group})
	if err != nil {
		t.Fatalf("list nodeclaims: %v", err)
	}
	total := resource.Quantity{}
	for _, nc := range list.Items {
		cpu, _, _ := unstructured.NestedString(nc.Object, "status", "capacity", "cpu")
		q, err := resource.ParseQuantity(cpu)
		if err != nil {
			t.Fatalf("NodeClaim %s capacity cpu %q: %v", nc.GetName(), cpu, err)
		}
		total.Add(q)
	}
	if total.Cmp(resource.MustParse("4")) > 0 {
		t.Errorf("NodeClaims of a NodePool limited to 4 cpu have %s cpu", total.String())
	}
	t.Logf("%d NodeClaims, %s cpu", len(list.Items), total.String())
}
