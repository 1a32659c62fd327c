package static

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/e2e/framework"
)

// timeout bounds each wait: launches take a second or two on kwok; the rest is room for a
// loaded 2-core machine.
const timeout = 3 * time.Minute

// createStaticPool creates a kwok static NodePool of on-demand c5.large with replicas,
// limits.nodes and the disruption lines given (indented two spaces, under spec).
func createStaticPool(t *testing.T, name string, replicas, limit int, disruption string) {
	t.Helper()
	env.CreateKWOKNodeClass(t, name)
	env.Create(t, framework.NodePools, fmt.Sprintf(`
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: %[1]q}
spec:
  replicas: %[3]d
  limits: {nodes: %[4]d}
%[5]s
  template:
    metadata:
      labels: {%[2]s: %[1]q}
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: %[1]q}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: kubernetes.io/os, operator: In, values: [linux]}
      - {key: node.kubernetes.io/instance-type, operator: In, values: [c5.large]}
`, name, framework.GroupLabel, replicas, limit, disruption))
}

// nodeClaims lists the NodePool's NodeClaims.
func nodeClaims(ctx context.Context, pool string) ([]karpv1.NodeClaim, error) {
	list, err := env.Dynamic.Resource(framework.NodeClaims).List(ctx, metav1.ListOptions{LabelSelector: karpv1.NodePoolLabelKey + "=" + pool})
	if err != nil {
		return nil, err
	}
	out := make([]karpv1.NodeClaim, len(list.Items))
	for i := range list.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// awaitInitialized waits until the pool has exactly want NodeClaims, none being deleted, all
// initialized, and returns their names.
func awaitInitialized(t *testing.T, pool string, want int) sets.Set[string] {
	t.Helper()
	var names sets.Set[string]
	framework.Eventually(t, timeout, fmt.Sprintf("%d initialized NodeClaims of %s", want, pool), func(ctx context.Context) (bool, error) {
		ncs, err := nodeClaims(ctx, pool)
		if err != nil {
			return false, err
		}
		names = sets.New[string]()
		for _, nc := range ncs {
			if nc.DeletionTimestamp != nil {
				return false, fmt.Errorf("%s is being deleted", nc.Name)
			}
			if !meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized) {
				return false, fmt.Errorf("%s is not initialized", nc.Name)
			}
			names.Insert(nc.Name)
		}
		if len(ncs) != want {
			return false, fmt.Errorf("%d NodeClaims", len(ncs))
		}
		return true, nil
	})
	return names
}

// scale sets the NodePool's replicas through the scale subresource, as `kubectl scale
// nodepool <pool> --replicas=n` does.
func scale(t *testing.T, pool string, n int64) {
	t.Helper()
	nodePools := env.Dynamic.Resource(framework.NodePools)
	s, err := nodePools.Get(t.Context(), pool, metav1.GetOptions{}, "scale")
	if err != nil {
		t.Fatalf("get the scale of %s: %v", pool, err)
	}
	if err := unstructured.SetNestedField(s.Object, n, "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	if _, err := nodePools.Update(t.Context(), s, metav1.UpdateOptions{}, "scale"); err != nil {
		t.Fatalf("scale %s to %d: %v", pool, n, err)
	}
}

// TestStaticNodePoolScalesUpAndDown: with no pod pending, a static NodePool launches its
// replicas, follows its scale subresource up (within limits.nodes) and down, and reports its
// count in status.nodes, the scale's status.replicas.
func TestStaticNodePoolScalesUpAndDown(t *testing.T) {
	t.Parallel()
	pool := framework.UniqueName("static-scale")
	createStaticPool(t, pool, 2, 4, "")
	awaitInitialized(t, pool, 2)

	scale(t, pool, 3)
	awaitInitialized(t, pool, 3)
	framework.Eventually(t, timeout, "the scale's status.replicas is 3", func(ctx context.Context) (bool, error) {
		s, err := env.Dynamic.Resource(framework.NodePools).Get(ctx, pool, metav1.GetOptions{}, "scale")
		if err != nil {
			return false, err
		}
		got, _, _ := unstructured.NestedInt64(s.Object, "status", "replicas")
		return got == 3, fmt.Errorf("status.replicas %d", got)
	})

	// limits.nodes (4) holds the pool below 6 replicas.
	scale(t, pool, 6)
	awaitInitialized(t, pool, 4)

	scale(t, pool, 1)
	awaitInitialized(t, pool, 1)
}

// TestPodsLandOnStaticNodesWithoutNewNodeClaims: pods that fit only the static NodePool's
// nodes run there and no NodeClaim is added for them; a pod that does not fit stays pending
// and no NodeClaim is added either.
func TestPodsLandOnStaticNodesWithoutNewNodeClaims(t *testing.T) {
	t.Parallel()
	pool := framework.UniqueName("static-pods")
	createStaticPool(t, pool, 2, 10, "")
	before := awaitInitialized(t, pool, 2)
	ns := env.Namespace(t)
	for i := range 3 {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", i), Namespace: ns, Labels: map[string]string{"app": "web"}},
			Spec: framework.GroupPodSpec(pool, "250m", "128Mi")}
		if _, err := env.Client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	big := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: ns}, Spec: framework.GroupPodSpec(pool, "8", "128Mi")}
	if _, err := env.Client.CoreV1().Pods(ns).Create(t.Context(), big, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nodes := sets.New[string]()
	for _, nc := range mustNodeClaims(t, pool) {
		nodes.Insert(nc.Status.NodeName)
	}
	env.AwaitPods(t, ns, "app=web", 3, timeout, func(p corev1.Pod) error {
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("%s is %s", p.Name, p.Status.Phase)
		}
		if !nodes.Has(p.Spec.NodeName) {
			return fmt.Errorf("%s runs on %q, not a node of the static NodePool", p.Name, p.Spec.NodeName)
		}
		return nil
	})
	// The big pod has been through provisioning: the scheduler's plugin records why it
	// stays pending. Until then, and after, the pool's NodeClaims are the same two.
	framework.Eventually(t, timeout, "the big pod is unschedulable", func(ctx context.Context) (bool, error) {
		p, err := env.Client.CoreV1().Pods(ns).Get(ctx, "big", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				return true, nil
			}
		}
		return false, fmt.Errorf("conditions %v", p.Status.Conditions)
	})
	after := awaitInitialized(t, pool, 2)
	if !after.Equal(before) {
		t.Errorf("NodeClaims %v became %v: a NodeClaim was added or replaced for pods", sets.List(before), sets.List(after))
	}
}

// TestStaticNodePoolDriftReplacesOneAtATime: a template change drifts every node of a static
// NodePool; each is replaced by a NodeClaim with the new template, never more than one
// disrupting at once (budget nodes: 1), never more NodeClaims than limits.nodes, and the
// pool ends at its replicas with the pods running.
func TestStaticNodePoolDriftReplacesOneAtATime(t *testing.T) {
	t.Parallel()
	pool := framework.UniqueName("static-drift")
	createStaticPool(t, pool, 2, 3, `  disruption: {budgets: [{nodes: "1"}]}`)
	original := awaitInitialized(t, pool, 2)
	ns := env.Namespace(t)
	// A Deployment, so the pod evicted by the drain comes back on the replacement.
	labels := map[string]string{"app": "web"}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: framework.GroupPodSpec(pool, "250m", "128Mi")},
		},
	}
	if _, err := env.Client.AppsV1().Deployments(ns).Create(t.Context(), deploy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	env.AwaitPods(t, ns, "app=web", 1, timeout, func(p corev1.Pod) error {
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("%s is %s", p.Name, p.Status.Phase)
		}
		return nil
	})

	w := watch(t, pool)
	patch := []byte(`{"spec": {"template": {"metadata": {"labels": {"joinery.dev/e2e-drift": "v2"}}}}}`)
	if _, err := env.Dynamic.Resource(framework.NodePools).Patch(t.Context(), pool, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 2*timeout, "every NodeClaim replaced", func(ctx context.Context) (bool, error) {
		ncs, err := nodeClaims(ctx, pool)
		if err != nil {
			return false, err
		}
		for _, nc := range ncs {
			if original.Has(nc.Name) || nc.Labels["joinery.dev/e2e-drift"] != "v2" {
				return false, fmt.Errorf("%s not replaced yet", nc.Name)
			}
		}
		return len(ncs) == 2, fmt.Errorf("%d NodeClaims", len(ncs))
	})
	awaitInitialized(t, pool, 2)
	env.AwaitPods(t, ns, "app=web", 1, timeout, func(p corev1.Pod) error {
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("%s is %s", p.Name, p.Status.Phase)
		}
		return nil
	})
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("NodeClaims %v replaced; at most %d disrupting and %d in all at once", sets.List(original), w.maxDisrupting, w.maxTotal)
	if w.maxDisrupting > 1 {
		t.Errorf("up to %d NodeClaims disrupting at once, budget is 1", w.maxDisrupting)
	}
	if w.maxTotal > 3 {
		t.Errorf("up to %d NodeClaims at once, limits.nodes is 3", w.maxTotal)
	}
}

func mustNodeClaims(t *testing.T, pool string) []karpv1.NodeClaim {
	t.Helper()
	ncs, err := nodeClaims(t.Context(), pool)
	if err != nil {
		t.Fatal(err)
	}
	return ncs
}

// commandAnnotation marks a candidate of a disruption command.
const commandAnnotation = "joinery.dev/disruption-command"

// watcher samples a NodePool's NodeClaims every 250 ms and records the most that were
// disrupting at once (chosen by a command, or being deleted) and the most in all.
type watcher struct {
	mu            sync.Mutex
	maxDisrupting int
	maxTotal      int
	stop          func()
}

func watch(t *testing.T, pool string) *watcher {
	w := &watcher{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var once sync.Once
	w.stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(w.stop)
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if ncs, err := nodeClaims(ctx, pool); err == nil {
				disrupting := 0
				for _, nc := range ncs {
					if nc.DeletionTimestamp != nil || nc.Annotations[commandAnnotation] != "" {
						disrupting++
					}
				}
				w.mu.Lock()
				w.maxDisrupting = max(w.maxDisrupting, disrupting)
				w.maxTotal = max(w.maxTotal, len(ncs))
				w.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return w
}
