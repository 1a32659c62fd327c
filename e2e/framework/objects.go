package framework

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"github.com/joinery-dev/joinery/internal/localcluster"
)

// cleanupTimeout bounds deleting a test's objects; t.Context is cancelled by then.
const cleanupTimeout = time.Minute

// Namespace creates a namespace for the test, named after it, and deletes it when the test
// ends. On failure, the test's events, pods, nodes, NodeClaims and component logs are printed
// first.
func (e *Env) Namespace(t *testing.T) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-", " ", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.Trim(name, "-") + "-" + rand.String(5)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"joinery.dev/e2e": "true"}}}
	if _, err := e.Client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			e.Dump(t, name)
		}
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if err := e.Client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", name, err)
		}
	})
	return name
}

// KwokNode creates a node kwok manages (annotation kwok.x-k8s.io/node=fake) with the given
// capacity, as a cloud provider would, and deletes it when the test ends. The node carries a
// taint-free spec and the labels a real node has.
func (e *Env) KwokNode(t *testing.T, name string, cpu, memory string) *corev1.Node {
	t.Helper()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{localcluster.KwokNodeAnnotation: localcluster.KwokNodeAnnotationValue},
			Labels: map[string]string{
				corev1.LabelHostname: name,
				corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
				"joinery.dev/e2e": "true",
			},
		},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(cpu),
			corev1.ResourceMemory: resource.MustParse(memory),
			corev1.ResourcePods:   resource.MustParse("110"),
		}},
	}
	created, err := e.Client.CoreV1().Nodes().Create(t.Context(), node, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create node %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if err := e.Client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete node %s: %v", name, err)
		}
	})
	return created
}

// UniqueName returns prefix with a random suffix, for cluster-scoped objects such as nodes.
func UniqueName(prefix string) string { return fmt.Sprintf("%s-%s", prefix, rand.String(5)) }

// AwaitNodeReady waits until the node's Ready condition is True.
func (e *Env) AwaitNodeReady(t *testing.T, name string, timeout time.Duration) *corev1.Node {
	t.Helper()
	var node *corev1.Node
	Eventually(t, timeout, "node "+name+" Ready", func(ctx context.Context) (bool, error) {
		var err error
		if node, err = e.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == corev1.ConditionTrue, fmt.Errorf("Ready=%s (%s)", cond.Status, cond.Reason)
			}
		}
		return false, fmt.Errorf("no Ready condition yet")
	})
	return node
}

// AwaitPodRunning waits until the pod is Running with an IP.
func (e *Env) AwaitPodRunning(t *testing.T, namespace, name string, timeout time.Duration) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	Eventually(t, timeout, "pod "+namespace+"/"+name+" Running", func(ctx context.Context) (bool, error) {
		var err error
		if pod, err = e.Client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		if pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" {
			return false, fmt.Errorf("phase %q, node %q, IP %q", pod.Status.Phase, pod.Spec.NodeName, pod.Status.PodIP)
		}
		return true, nil
	})
	return pod
}

// AwaitPods waits until exactly want pods match selector in namespace and every one passes
// ok, and returns them.
func (e *Env) AwaitPods(t *testing.T, namespace, selector string, want int, timeout time.Duration, ok func(corev1.Pod) error) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	Eventually(t, timeout, fmt.Sprintf("%d pods %q in %s", want, selector, namespace), func(ctx context.Context) (bool, error) {
		list, err := e.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err
		}
		pods = list.Items
		if len(pods) != want {
			return false, fmt.Errorf("%d pods", len(pods))
		}
		for _, pod := range pods {
			if err := ok(pod); err != nil {
				return false, fmt.Errorf("pod %s: %w", pod.Name, err)
			}
		}
		return true, nil
	})
	return pods
}

// RunningOn checks a pod runs on node, for AwaitPods.
func RunningOn(node string) func(corev1.Pod) error {
	return func(pod corev1.Pod) error {
		if pod.Status.Phase != corev1.PodRunning || pod.Spec.NodeName != node {
			return fmt.Errorf("phase %q on node %q, want Running on %s", pod.Status.Phase, pod.Spec.NodeName, node)
		}
		return nil
	}
}

// AwaitGone waits until get reports NotFound.
func AwaitGone(t *testing.T, timeout time.Duration, what string, get func(ctx context.Context) error) {
	t.Helper()
	Eventually(t, timeout, what+" deleted", func(ctx context.Context) (bool, error) {
		err := get(ctx)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return false, fmt.Errorf("still exists")
	})
}

// GroupLabel labels a test's NodePool's nodes and the pods that may run only there, so tests
// sharing a cluster never share capacity.
const GroupLabel = "joinery.dev/e2e-group"

// GroupPodSpec is the spec of a pause container requesting cpu and memory that runs only on
// nodes labelled GroupLabel=group and stops at once when evicted.
func GroupPodSpec(group, cpu, memory string) corev1.PodSpec {
	return corev1.PodSpec{
		NodeSelector:                  map[string]string{GroupLabel: group},
		TerminationGracePeriodSeconds: ptr.To[int64](0),
		Containers: []corev1.Container{{
			Name:  "app",
			Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse(cpu),
				corev1.ResourceMemory: resource.MustParse(memory),
			}},
		}},
	}
}

// CreateKWOKNodeClass creates the KWOKNodeClass named name: the kwok provider's node class,
// which has no fields a suite sets.
func (e *Env) CreateKWOKNodeClass(t *testing.T, name string) {
	t.Helper()
	e.Create(t, KWOKNodeClasses, fmt.Sprintf(`{"apiVersion": "karpenter.kwok.sh/v1alpha1", "kind": "KWOKNodeClass", "metadata": {"name": %q}}`, name))
}

// GPUClaim is a ResourceClaim in ns for count devices of the DeviceClass class whose
// gpu.nvidia.com productName is model, under the request name request.
func GPUClaim(ns, name, class, request, model string, count int64) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: request,
			Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: class,
				Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
					Expression: `device.attributes["gpu.nvidia.com"].productName == "` + model + `"`,
				}}},
				AllocationMode: resourceapi.DeviceAllocationModeExactCount,
				Count:          count,
			},
		}}}},
	}
}

// ScaleDeployment sets a Deployment's replicas through its scale subresource, as kubectl scale
// does. A merge patch carries no resourceVersion, so the deployment controller's own writes to
// the object cannot make it fail with a conflict (a get-then-update of the scale could).
func (e *Env) ScaleDeployment(t *testing.T, namespace, name string, replicas int32) {
	t.Helper()
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)
	if _, err := e.Client.AppsV1().Deployments(namespace).Patch(t.Context(), name, types.MergePatchType, patch, metav1.PatchOptions{}, "scale"); err != nil {
		t.Fatalf("scale deployment %s/%s to %d: %v", namespace, name, replicas, err)
	}
}
