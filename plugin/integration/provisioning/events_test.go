package provisioning

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestNoCompatibleInstanceTypesEvent (issue 14): a NodePool whose requirements name no type
// of the catalog, and one whose types are too few for its minValues, each get Karpenter's
// NoCompatibleInstanceTypes Warning with Karpenter's message, from the scheduler that planned
// a pending pod; the NodePool that can serve the pod gets none, and the pod its NodeClaim.
func TestNoCompatibleInstanceTypesEvent(t *testing.T) {
	e := testEnv(t)
	ns := e.newNamespace(t)
	nothing := nodePool("no-types", weight(20), requires(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, nil, "no-such-type"))
	short := nodePool("too-few-types", weight(10), requires(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, ptr.To(2), "c5.xlarge", "no-such-type"))
	serving := nodePool("serving", requires(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, nil, "c5.xlarge"))
	e.create(t, ns, nothing)
	e.create(t, ns, short)
	e.create(t, ns, serving)
	p := e.createPlainPods(t, ns, pod("pending", "1", "1Gi"))[0]
	e.startKubeScheduler(t, ns)

	pollUntil(t, "waiting for the pod's NodeClaim", func(ctx context.Context) (bool, string, error) {
		claims, err := e.nodeClaims(ctx)
		if err != nil {
			return false, err.Error(), nil
		}
		nc := podsPlannedOnto(claims)[p.UID]
		if nc == nil {
			return false, fmt.Sprintf("%d NodeClaims", len(claims)), nil
		}
		if got := nc.Labels["karpenter.sh/nodepool"]; got != serving.Name {
			return false, "", fmt.Errorf("the pod was planned onto NodePool %s, want %s", got, serving.Name)
		}
		return true, "", nil
	})
	for _, want := range []struct {
		uid     string
		name    string
		message string
	}{
		{string(nothing.UID), nothing.Name, "NodePool requirements filtered out all compatible available instance types"},
		{string(short.UID), short.Name, "NodePool requirements filtered out all compatible available instance types due to minValues incompatibility"},
	} {
		pollUntil(t, "waiting for the NoCompatibleInstanceTypes event of "+want.name, func(ctx context.Context) (bool, string, error) {
			events, err := e.kube.EventsV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{FieldSelector: "reason=NoCompatibleInstanceTypes,regarding.uid=" + want.uid})
			if err != nil {
				return false, err.Error(), nil
			}
			if len(events.Items) == 0 {
				return false, "no event", nil
			}
			ev := events.Items[0]
			if ev.Type != corev1.EventTypeWarning || ev.Note != want.message || ev.Regarding.Kind != "NodePool" || ev.Regarding.Name != want.name {
				return false, "", fmt.Errorf("event %s %s on %s %s: %q, want a Warning on NodePool %s: %q", ev.Type, ev.Reason, ev.Regarding.Kind, ev.Regarding.Name, ev.Note, want.name, want.message)
			}
			return true, "", nil
		})
	}
	events, err := e.kube.EventsV1().Events(metav1.NamespaceDefault).List(t.Context(), metav1.ListOptions{FieldSelector: "reason=NoCompatibleInstanceTypes,regarding.uid=" + string(serving.UID)})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Items) > 0 {
		t.Errorf("NodePool %s, which serves the pod, got %q", serving.Name, events.Items[0].Note)
	}
}
