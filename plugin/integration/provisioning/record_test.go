package provisioning

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/simulation"
)

// TestLostPlannedPodsAnnotationIsRestored (issue 17, defect 9): the planned-pods annotation of
// a launching NodeClaim that holds one pod is removed, then overwritten with garbage. Each time
// the scheduler writes it again from its record, so a pod that arrives next is not planned
// onto capacity already promised (the solver reads only the annotation) and gets a NodeClaim
// of its own; both NodeClaims launch, each pod binds where it was planned, and no pod is
// planned again onto a duplicate NodeClaim.
func TestLostPlannedPodsAnnotationIsRestored(t *testing.T) {
	e := testEnv(t)
	ns := e.newNamespace(t)
	// One instance type that holds one of the pods, never two.
	e.create(t, ns, nodePool("default", requires(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, nil, "c5.xlarge")))
	first := e.createPlainPods(t, ns, pod("first", "3", "1Gi"))[0]
	e.startKubeScheduler(t, ns)

	var launching string
	pollUntil(t, "waiting for the first pod's NodeClaim", func(ctx context.Context) (bool, string, error) {
		claims, err := e.nodeClaims(ctx)
		if err != nil {
			return false, err.Error(), nil
		}
		if nc := podsPlannedOnto(claims)[first.UID]; nc != nil {
			launching = nc.Name
			return true, "", nil
		}
		return false, fmt.Sprintf("%d NodeClaims", len(claims)), nil
	})

	for i, damage := range []struct {
		name  string
		apply func(annotations map[string]string)
	}{
		{"removed", func(a map[string]string) { delete(a, simulation.PlannedPodsAnnotationKey) }},
		{"corrupt", func(a map[string]string) { a[simulation.PlannedPodsAnnotationKey] = "not-a-uid,,{" }},
	} {
		var nc karpv1.NodeClaim
		if err := e.client.Get(t.Context(), client.ObjectKey{Name: launching}, &nc); err != nil {
			t.Fatal(err)
		}
		before := nc.DeepCopy()
		damage.apply(nc.Annotations)
		if err := e.client.Patch(t.Context(), &nc, client.MergeFrom(before)); err != nil {
			t.Fatalf("annotation %s: %v", damage.name, err)
		}
		pollUntil(t, "waiting for the "+damage.name+" annotation to be restored", func(ctx context.Context) (bool, string, error) {
			if err := e.client.Get(ctx, client.ObjectKey{Name: launching}, &nc); err != nil {
				return false, err.Error(), nil
			}
			got := simulation.PlannedPods(&nc)
			return slices.Equal(got, []types.UID{first.UID}), fmt.Sprintf("NodeClaim %s plans %q, want [%s]", launching, got, first.UID), nil
		})
		pollUntil(t, "waiting for the NodeClaim's PlannedPodsRestored event", func(ctx context.Context) (bool, string, error) {
			events, err := e.kube.EventsV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{FieldSelector: "reason=PlannedPodsRestored,regarding.name=" + launching})
			if err != nil {
				return false, err.Error(), nil
			}
			return len(events.Items) >= i+1, fmt.Sprintf("%d events", len(events.Items)), nil
		})
	}

	second := e.createPlainPods(t, ns, pod("second", "3", "1Gi"))[0]
	var claims []*karpv1.NodeClaim
	pollUntil(t, "waiting for the second pod's NodeClaim", func(ctx context.Context) (bool, string, error) {
		var err error
		if claims, err = e.nodeClaims(ctx); err != nil {
			return false, err.Error(), nil
		}
		nc := podsPlannedOnto(claims)[second.UID]
		switch {
		case nc == nil:
			return false, fmt.Sprintf("%d NodeClaims", len(claims)), nil
		case nc.Name == launching:
			return false, "", fmt.Errorf("the second pod was planned onto %s, which holds the first", launching)
		}
		return true, "", nil
	})
	if len(claims) != 2 {
		t.Fatalf("%d NodeClaims, want 2", len(claims))
	}
	for _, nc := range claims {
		e.launchAndInitialize(t, nc)
	}
	onto := podsPlannedOnto(claims)
	pollUntil(t, "waiting for both pods to bind where they were planned", func(ctx context.Context) (bool, string, error) {
		now, err := e.nodeClaims(ctx)
		if err != nil {
			return false, err.Error(), nil
		}
		if len(now) != 2 {
			return false, "", fmt.Errorf("%d NodeClaims: a pod was planned again", len(now))
		}
		var waiting []string
		for _, p := range []*corev1.Pod{first, second} {
			pod, err := e.kube.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error(), nil
			}
			switch pod.Spec.NodeName {
			case "":
				waiting = append(waiting, pod.Name+": "+scheduledMessage(pod))
			case onto[pod.UID].Name:
			default:
				return false, "", fmt.Errorf("pod %s bound to %s, planned onto %s", pod.Name, pod.Spec.NodeName, onto[pod.UID].Name)
			}
		}
		return len(waiting) == 0, fmt.Sprintf("unbound: %v", waiting), nil
	})
}
