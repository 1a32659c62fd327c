package provisioning

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/simulation"
)

// TestPodsPlannedInFlightFitTheLaunchedType (issue 17, defect 4): a NodeClaim is created for
// one pod, and three more are planned onto it while it launches — its spec, immutable, still
// asks only for the first. It launches (the kwok provider, for the requests the lifecycle
// controller launches) as a type that holds all four, and a real kube-scheduler binds every
// one of them there by its Filters; none is planned again.
func TestPodsPlannedInFlightFitTheLaunchedType(t *testing.T) {
	e := testEnv(t)
	ns := e.newNamespace(t)
	e.create(t, ns, nodePool("default", requires(familyLabel, corev1.NodeSelectorOpIn, nil, "c5")))
	first := e.createPlainPods(t, ns, pod("first", "1", "1Gi"))
	e.startKubeScheduler(t, ns)

	var launching *karpv1.NodeClaim
	pollUntil(t, "waiting for the first pod's NodeClaim", func(ctx context.Context) (bool, string, error) {
		claims, err := e.nodeClaims(ctx)
		if err != nil {
			return false, err.Error(), nil
		}
		if nc := podsPlannedOnto(claims)[first[0].UID]; nc != nil {
			launching = nc
			return true, "", nil
		}
		return false, fmt.Sprintf("%d NodeClaims", len(claims)), nil
	})
	later := e.createPlainPods(t, ns, pods(3, "later", "1", "1Gi")...)
	all := append(first, later...)
	pollUntil(t, "waiting for the later pods to be planned onto the launching NodeClaim", func(ctx context.Context) (bool, string, error) {
		claims, err := e.nodeClaims(ctx)
		if err != nil {
			return false, err.Error(), nil
		}
		if len(claims) != 1 {
			return false, "", fmt.Errorf("%d NodeClaims, want the launching %s only: the later pods fit it", len(claims), launching.Name)
		}
		onto := podsPlannedOnto(claims)
		for _, pod := range all {
			if onto[pod.UID] == nil {
				return false, "pod " + pod.Name + " not planned yet", nil
			}
		}
		launching = claims[0]
		return true, "", nil
	})
	if got := launching.Spec.Resources.Requests.Cpu(); got.Cmp(resource.MustParse("2")) >= 0 {
		t.Fatalf("the NodeClaim's spec requests %v cpu; the test needs a spec made for the first pod only", got)
	}

	e.launchAndInitialize(t, launching)
	var node corev1.Node
	if err := e.client.Get(t.Context(), client.ObjectKey{Name: launching.Name}, &node); err != nil {
		t.Fatal(err)
	}
	t.Logf("NodeClaim %s (spec requests %v, planned requests %s) launched as %s", launching.Name,
		launching.Spec.Resources.Requests, launching.Annotations[simulation.PlannedRequestsAnnotationKey], node.Labels[corev1.LabelInstanceTypeStable])
	pollUntil(t, "waiting for every planned pod to bind to the launched node", func(ctx context.Context) (bool, string, error) {
		claims, err := e.nodeClaims(ctx)
		if err != nil {
			return false, err.Error(), nil
		}
		if len(claims) != 1 {
			return false, "", fmt.Errorf("a pod was planned again onto a new NodeClaim (%d NodeClaims): the launched %s does not hold every planned pod", len(claims), node.Labels[corev1.LabelInstanceTypeStable])
		}
		var waiting []string
		for _, p := range all {
			pod, err := e.kube.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error(), nil
			}
			switch pod.Spec.NodeName {
			case "":
				waiting = append(waiting, pod.Name+": "+scheduledMessage(pod))
			case node.Name:
			default:
				return false, "", fmt.Errorf("pod %s bound to %s, planned onto %s", pod.Name, pod.Spec.NodeName, node.Name)
			}
		}
		return len(waiting) == 0, fmt.Sprintf("unbound: %v", waiting), nil
	})
}
