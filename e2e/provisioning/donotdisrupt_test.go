package provisioning

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/joinery-dev/joinery/e2e/framework"
)

// TestDoNotDisruptPodHoldsDrainUntilTerminationGracePeriod: a pod annotated
// karpenter.sh/do-not-disrupt is not evicted when its NodeClaim is deleted; the NodeClaim's
// terminationGracePeriod bounds the wait, after which the pod is deleted and the node goes.
func TestDoNotDisruptPodHoldsDrainUntilTerminationGracePeriod(t *testing.T) {
	group := framework.UniqueName("dnd")
	createGroupNodePool(t, group, nodePool{name: group, terminationGracePeriod: "20s"})
	ns := env.Namespace(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "precious", Namespace: ns,
			Labels:      map[string]string{"joinery.dev/e2e-group": group},
			Annotations: map[string]string{"karpenter.sh/do-not-disrupt": "true"}},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{"joinery.dev/e2e-group": group},
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
			}}},
		},
	}
	if _, err := env.Client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	node := env.AwaitPodRunning(t, ns, pod.Name, runningTimeout).Spec.NodeName

	if err := env.Dynamic.Resource(framework.NodeClaims).Delete(t.Context(), node, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete nodeclaim %s: %v", node, err)
	}
	// The drain starts, records its deadline on the NodeClaim, and leaves the pod alone.
	framework.Eventually(t, time.Minute, "termination deadline on nodeclaim "+node, func(ctx context.Context) (bool, error) {
		nc, err := env.Dynamic.Resource(framework.NodeClaims).Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if nc.GetAnnotations()["karpenter.sh/nodeclaim-termination-timestamp"] == "" {
			return false, fmt.Errorf("no karpenter.sh/nodeclaim-termination-timestamp annotation yet")
		}
		return true, nil
	})
	p, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), pod.Name, metav1.GetOptions{})
	switch {
	case err != nil:
		t.Fatalf("the do-not-disrupt pod is gone as soon as the drain began: %v", err)
	case p.DeletionTimestamp != nil:
		t.Fatalf("the do-not-disrupt pod was deleted as soon as the drain began, at %v", p.DeletionTimestamp)
	}
	// The grace period (20 s) ends the wait: the pod is deleted and the node goes.
	framework.AwaitGone(t, 90*time.Second, "pod "+pod.Name, func(ctx context.Context) error {
		p, err := env.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err == nil && p.DeletionTimestamp != nil {
			return apierrors.NewNotFound(corev1.Resource("pods"), pod.Name) // deleted; kwok removes it
		}
		return err
	})
	framework.AwaitGone(t, 90*time.Second, "node "+node, func(ctx context.Context) error {
		_, err := env.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		return err
	})
}
