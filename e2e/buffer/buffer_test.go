package buffer

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	autoscalingv1alpha1 "github.com/joinery-dev/joinery/apis/autoscaling/v1alpha1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/controller/disruption"
	"github.com/joinery-dev/joinery/e2e/framework"
)

// timeout bounds each wait: launches take a second or two on kwok, a disruption pass runs
// every 10 s; the rest is room for a loaded 2-core machine.
const timeout = 3 * time.Minute

var (
	buffersAlpha = schema.GroupVersionResource{Group: "autoscaling.x-k8s.io", Version: "v1alpha1", Resource: "capacitybuffers"}
	buffersBeta  = schema.GroupVersionResource{Group: "autoscaling.x-k8s.io", Version: "v1beta1", Resource: "capacitybuffers"}
	nodeClaimsV1 = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodeclaims"}
)

// TestCapacityBuffer: a buffer of 5 chunks of a Deployment's template (applied as v1beta1,
// read back as v1alpha1) gets 5 c5.large nodes — one 1200m chunk each — while the Deployment
// has no pod; it goes Provisioning=True. Scaling the Deployment to 5 lands every pod on those
// nodes at once, with no new NodeClaim; the buffer then refills with 5 more nodes and is
// Provisioning=True again. Those refilled nodes run no pod, yet consolidation (emptiness,
// consolidateAfter 5s) keeps every one: it reports them Unconsolidatable, since the buffer
// would no longer fit.
func TestCapacityBuffer(t *testing.T) {
	pool := framework.UniqueName("buffer")
	createNodePool(t, pool, `  disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 5s, budgets: [{nodes: "100%"}]}`)
	ns := env.Namespace(t)
	createDeployment(t, ns, pool, "web", 0, "1200m")

	// Applied as v1beta1; read back as v1alpha1.
	applied := createBuffer(t, ns, "web", `{"scalableRef": {"apiGroup": "apps", "kind": "Deployment", "name": "web"}, "replicas": 5}`)
	if applied.GetAPIVersion() != buffersBeta.GroupVersion().String() {
		t.Fatalf("created as %s", applied.GetAPIVersion())
	}
	alpha, err := env.Dynamic.Resource(buffersAlpha).Namespace(ns).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read the v1beta1 buffer as v1alpha1: %v", err)
	}
	if got, _, _ := unstructured.NestedInt64(alpha.Object, "spec", "replicas"); alpha.GetAPIVersion() != buffersAlpha.GroupVersion().String() || got != 5 {
		t.Fatalf("read back as %s with spec.replicas %d, want v1alpha1 and 5", alpha.GetAPIVersion(), got)
	}

	b := awaitBuffer(t, ns, "web", "ReadyForProvisioning=True with 5 replicas", func(b *autoscalingv1alpha1.CapacityBuffer) error {
		if !meta.IsStatusConditionTrue(b.Status.Conditions, autoscalingv1alpha1.ConditionTypeReadyForProvisioning) {
			return fmt.Errorf("conditions %v", b.Status.Conditions)
		}
		if b.Status.Replicas == nil || *b.Status.Replicas != 5 || b.Status.PodTemplateRef == nil {
			return fmt.Errorf("status.replicas %v, podTemplateRef %v", b.Status.Replicas, b.Status.PodTemplateRef)
		}
		return nil
	})
	t.Logf("buffer resolved to PodTemplate %s", b.Status.PodTemplateRef.Name)

	// No pod is pending, yet the buffer gets its 5 nodes and says so.
	awaitProvisioned(t, ns, "web")
	first := initializedNodeClaims(t, pool, 5)
	pods, err := env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil || len(pods.Items) != 0 {
		t.Fatalf("pods in %s: %v, %v; want none (the buffer's pods are virtual)", ns, pods, err)
	}

	// A scale-up lands on the buffer's nodes: no new NodeClaim is made for it. How soon is
	// logged, not asserted: on a loaded machine scheduling 5 pods can take minutes, and the
	// nodes they land on are what proves the buffer served them.
	scaled := time.Now()
	scale(t, ns, "web", 5)
	running := env.AwaitPods(t, ns, "app=web", 5, timeout, func(p corev1.Pod) error {
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		return nil
	})
	t.Logf("5 pods Running %s after the scale-up", time.Since(scaled).Round(time.Millisecond))
	firstNodes := sets.New[string]()
	for _, nc := range first {
		firstNodes.Insert(nc.Status.NodeName)
	}
	for _, p := range running {
		if !firstNodes.Has(p.Spec.NodeName) {
			t.Errorf("pod %s runs on %s, not on a node the buffer provisioned (%v)", p.Name, p.Spec.NodeName, sets.List(firstNodes))
		}
	}

	// The buffer refills: 5 more nodes, and Provisioning=True again.
	all := initializedNodeClaims(t, pool, 10)
	awaitProvisioned(t, ns, "web")
	refill := map[string]string{} // NodeClaim → node, of the nodes no pod runs on
	for _, nc := range all {
		if !firstNodes.Has(nc.Status.NodeName) {
			refill[nc.Name] = nc.Status.NodeName
		}
	}
	if len(refill) != 5 {
		t.Fatalf("%d refilled NodeClaims, want 5", len(refill))
	}

	// Consolidation keeps the buffer's capacity: the refilled nodes run no pod and are
	// consolidatable, but disruption reports them Unconsolidatable instead of removing them.
	framework.Eventually(t, timeout, "an Unconsolidatable event on a refilled NodeClaim", func(ctx context.Context) (bool, error) {
		ncs, err := nodeClaims(ctx, pool)
		if err != nil {
			return false, err
		}
		for _, nc := range ncs {
			if _, ok := refill[nc.Name]; ok && nc.DeletionTimestamp != nil {
				t.Fatalf("NodeClaim %s, holding the buffer's capacity, is being deleted (%s)", nc.Name, nc.Annotations[disruption.CommandAnnotationKey])
			}
		}
		if len(ncs) < len(all) {
			t.Fatalf("%d NodeClaims, fewer than the %d the workload and the buffer hold", len(ncs), len(all))
		}
		list, err := env.Client.EventsV1().Events("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.Reason == disruption.EventUnconsolidatable && e.Regarding.Kind == "NodeClaim" && refill[e.Regarding.Name] != "" {
				t.Logf("NodeClaim %s: %s", e.Regarding.Name, e.Note)
				return true, nil
			}
		}
		return false, fmt.Errorf("none yet")
	})
	now := mustNodeClaims(t, pool)
	if len(now) != 10 {
		t.Errorf("%d NodeClaims after consolidation looked at them, want the 10 the workload and the buffer hold", len(now))
	}
	for _, nc := range now {
		if nc.DeletionTimestamp != nil || nc.Annotations[disruption.CommandAnnotationKey] != "" {
			t.Errorf("NodeClaim %s is being disrupted", nc.Name)
		}
	}
	awaitProvisioned(t, ns, "web")
}

// createNodePool creates a kwok NodePool of c5.large nodes (one 1200m chunk each) labelled
// with the test's group, with spec lines (indented two spaces, under spec) added.
func createNodePool(t *testing.T, name, spec string) {
	t.Helper()
	env.CreateKWOKNodeClass(t, name)
	env.Create(t, framework.NodePools, fmt.Sprintf(`
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: %[1]q}
spec:
%[3]s
  template:
    metadata:
      labels: {%[2]s: %[1]q}
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: %[1]q}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: node.kubernetes.io/instance-type, operator: In, values: [c5.large]}
`, name, framework.GroupLabel, spec))
}

func createDeployment(t *testing.T, ns, pool, name string, replicas int32, cpu string) {
	t.Helper()
	labels := map[string]string{"app": name, framework.GroupLabel: pool}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: framework.GroupPodSpec(pool, cpu, "256Mi")},
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

// createBuffer creates a v1beta1 CapacityBuffer with the JSON spec; the namespace's deletion
// removes it.
func createBuffer(t *testing.T, ns, name, spec string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	manifest := fmt.Sprintf(`{"apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityBuffer", "metadata": {"name": %q, "namespace": %q}, "spec": %s}`, name, ns, spec)
	if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		t.Fatalf("parse buffer: %v", err)
	}
	created, err := env.Dynamic.Resource(buffersBeta).Namespace(ns).Create(t.Context(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create buffer %s: %v", name, err)
	}
	return created
}

func getBuffer(ctx context.Context, ns, name string) (*autoscalingv1alpha1.CapacityBuffer, error) {
	u, err := env.Dynamic.Resource(buffersAlpha).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	b := &autoscalingv1alpha1.CapacityBuffer{}
	return b, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, b)
}

func awaitBuffer(t *testing.T, ns, name, what string, ok func(*autoscalingv1alpha1.CapacityBuffer) error) *autoscalingv1alpha1.CapacityBuffer {
	t.Helper()
	var b *autoscalingv1alpha1.CapacityBuffer
	framework.Eventually(t, timeout, "buffer "+name+": "+what, func(ctx context.Context) (bool, error) {
		var err error
		if b, err = getBuffer(ctx, ns, name); err != nil {
			return false, err
		}
		return ok(b) == nil, ok(b)
	})
	return b
}

// awaitProvisioned waits for Provisioning=True: every chunk fits nodes that exist.
func awaitProvisioned(t *testing.T, ns, name string) {
	t.Helper()
	awaitBuffer(t, ns, name, "Provisioning=True", func(b *autoscalingv1alpha1.CapacityBuffer) error {
		c := meta.FindStatusCondition(b.Status.Conditions, autoscalingv1alpha1.ConditionTypeProvisioning)
		if c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Provisioning %+v", c)
		}
		return nil
	})
}

func nodeClaims(ctx context.Context, pool string) ([]karpv1.NodeClaim, error) {
	list, err := env.Dynamic.Resource(nodeClaimsV1).List(ctx, metav1.ListOptions{LabelSelector: karpv1.NodePoolLabelKey + "=" + pool})
	if err != nil {
		return nil, err
	}
	out := make([]karpv1.NodeClaim, len(list.Items))
	for i := range list.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &out[i]); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b karpv1.NodeClaim) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	return out, nil
}

func mustNodeClaims(t *testing.T, pool string) []karpv1.NodeClaim {
	t.Helper()
	ncs, err := nodeClaims(t.Context(), pool)
	if err != nil {
		t.Fatal(err)
	}
	return ncs
}

// initializedNodeClaims waits until the pool has exactly want NodeClaims, all initialized.
func initializedNodeClaims(t *testing.T, pool string, want int) []karpv1.NodeClaim {
	t.Helper()
	var ncs []karpv1.NodeClaim
	framework.Eventually(t, timeout, fmt.Sprintf("%d initialized NodeClaims in %s", want, pool), func(ctx context.Context) (bool, error) {
		var err error
		if ncs, err = nodeClaims(ctx, pool); err != nil {
			return false, err
		}
		if len(ncs) != want {
			return false, fmt.Errorf("%d NodeClaims", len(ncs))
		}
		for _, nc := range ncs {
			if !meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized) || nc.Status.NodeName == "" {
				return false, fmt.Errorf("NodeClaim %s not initialized", nc.Name)
			}
		}
		return true, nil
	})
	return ncs
}
