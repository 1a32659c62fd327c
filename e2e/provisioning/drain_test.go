package provisioning

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/joinery-dev/joinery/e2e/framework"
)

// TestDeletingNodeClaimDrainsWithinPDB: `kubectl delete nodeclaim` on a node running both
// replicas of a Deployment whose PDB allows one disruption evicts one replica, holds the other
// back until the replacement runs on new capacity, then evicts it and removes the node.
func TestDeletingNodeClaimDrainsWithinPDB(t *testing.T) {
	group := framework.UniqueName("drain")
	createGroupNodePool(t, group, nodePool{name: group})
	ns := env.Namespace(t)

	labels := map[string]string{"app": "web", "joinery.dev/e2e-group": group}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				NodeSelector:                  map[string]string{"joinery.dev/e2e-group": group},
				TerminationGracePeriodSeconds: ptr.To[int64](0),
				Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
				}}},
			}},
		},
	}
	if _, err := env.Client.AppsV1().Deployments(ns).Create(t.Context(), deploy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: labels},
		},
	}
	if _, err := env.Client.PolicyV1().PodDisruptionBudgets(ns).Create(t.Context(), pdb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pdb: %v", err)
	}

	selector := "joinery.dev/e2e-group=" + group
	pods := env.AwaitPods(t, ns, selector, 2, runningTimeout, running)
	first := pods[0].Spec.NodeName
	if pods[1].Spec.NodeName != first {
		t.Fatalf("replicas run on %s and %s; the scenario needs them on one node", first, pods[1].Spec.NodeName)
	}

	// Watch the replicas while the node drains: at no moment may both be gone or unready.
	if err := env.Dynamic.Resource(framework.NodeClaims).Delete(t.Context(), first, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete nodeclaim %s: %v", first, err)
	}
	framework.Eventually(t, runningTimeout, "replicas moved off the drained node", func(ctx context.Context) (bool, error) {
		list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err
		}
		var runningElsewhere, runningThere int
		for _, pod := range list.Items {
			if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
				continue
			}
			if pod.Spec.NodeName == first {
				runningThere++
			} else {
				runningElsewhere++
			}
		}
		if runningElsewhere+runningThere == 0 {
			t.Errorf("no replica running during the drain: the PDB was not respected")
		}
		if runningElsewhere < 2 || runningThere > 0 {
			return false, fmt.Errorf("%d replicas running elsewhere, %d on %s", runningElsewhere, runningThere, first)
		}
		return true, nil
	})
	framework.AwaitGone(t, runningTimeout, "node "+first, func(ctx context.Context) error {
		_, err := env.Client.CoreV1().Nodes().Get(ctx, first, metav1.GetOptions{})
		return err
	})

	// The second eviction must have been refused by the PDB while the replacement started.
	events, err := env.Client.CoreV1().Events(metav1.NamespaceAll).List(t.Context(), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + first + ",reason=FailedDraining",
	})
	if err != nil {
		t.Fatalf("list events: %v", err)
	}
	blocked := false
	for _, ev := range events.Items {
		blocked = blocked || strings.Contains(ev.Message, "PodDisruptionBudget")
	}
	if !blocked {
		t.Errorf("no FailedDraining event says a PodDisruptionBudget held an eviction back (events: %d)", len(events.Items))
	}
}
