package volatile

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/controller/disruption"
	"github.com/joinery-dev/joinery/controller/volatile"
	"github.com/joinery-dev/joinery/e2e/framework"
)

// timeout bounds each wait: a disruption pass every 10 s, 5 s of validation, consolidateAfter;
// the rest is room for a loaded 2-core machine.
const timeout = 3 * time.Minute

func createNodePool(t *testing.T, name string) {
	t.Helper()
	env.CreateKWOKNodeClass(t, name)
	env.Create(t, framework.NodePools, fmt.Sprintf(`
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: %[1]q}
spec:
  disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 20s, budgets: [{nodes: "100%%"}]}
  template:
    metadata:
      labels: {%[2]s: %[1]q}
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: %[1]q}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: kubernetes.io/os, operator: In, values: [linux]}
      - {key: node.kubernetes.io/instance-type, operator: In, values: [c5.large, c5.xlarge, c5.2xlarge]}
`, name, framework.GroupLabel))
}

func createDeployment(t *testing.T, ns, pool, name, cpu string, annotations map[string]string) {
	t.Helper()
	labels := map[string]string{"app": name, framework.GroupLabel: pool}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations}, Spec: framework.GroupPodSpec(pool, cpu, "256Mi")},
		},
	}
	if _, err := env.Client.AppsV1().Deployments(ns).Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment %s: %v", name, err)
	}
}

// raisePolicy makes every annotated pod created in ns ask for cpu: VPA's admission, in CEL.
func raisePolicy(t *testing.T, ns, cpu string) {
	t.Helper()
	name := "raise-" + ns
	policy := &admissionv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
				ResourceRules: []admissionv1.NamedRuleWithOperations{{RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				}}},
			},
			MatchConditions: []admissionv1.MatchCondition{{Name: "volatile", Expression: fmt.Sprintf(
				"has(object.metadata.annotations) && %q in object.metadata.annotations && object.metadata.annotations[%q] == 'true'", volatile.Annotation, volatile.Annotation)}},
			FailurePolicy:      ptr.To(admissionv1.Fail),
			ReinvocationPolicy: admissionv1.NeverReinvocationPolicy,
			Mutations: []admissionv1.Mutation{{PatchType: admissionv1.PatchTypeJSONPatch, JSONPatch: &admissionv1.JSONPatch{
				Expression: fmt.Sprintf(`[JSONPatch{op: "replace", path: "/spec/containers/0/resources/requests/cpu", value: %q}]`, cpu),
			}}},
		},
	}
	policies := env.Client.AdmissionregistrationV1().MutatingAdmissionPolicies()
	if _, err := policies.Create(t.Context(), policy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create MutatingAdmissionPolicy: %v", err)
	}
	bindings := env.Client.AdmissionregistrationV1().MutatingAdmissionPolicyBindings()
	binding := &admissionv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: admissionv1.MutatingAdmissionPolicyBindingSpec{PolicyName: name}}
	if _, err := bindings.Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create MutatingAdmissionPolicyBinding: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := bindings.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete binding %s: %v", name, err)
		}
		if err := policies.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete policy %s: %v", name, err)
		}
	})
}

// TestConsolidationRespectsVolatileRequests: an annotated 500m pod runs alone on a c5.large,
// next to a c5.xlarge whose 2500m pod leaves about 1.4 cpu free, so deleting the c5.large and
// moving the pod is consolidation's obvious move. A MutatingAdmissionPolicy (standing in for
// VPA) now gives such pods 1500m when they are created. The command built on the stale
// prediction is rejected by the fresh dry-run before any eviction (VolatileRequestsChanged);
// the next passes simulate with 1500m, which fits nowhere cheaper (Unconsolidatable), and the
// c5.large stays.
func TestConsolidationRespectsVolatileRequests(t *testing.T) {
	pool := framework.UniqueName("volatile")
	createNodePool(t, pool)
	ns := env.Namespace(t)

	createDeployment(t, ns, pool, "vpa", "500m", map[string]string{volatile.Annotation: "true"})
	small := env.AwaitPods(t, ns, "app=vpa", 1, timeout, func(p corev1.Pod) error {
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		return nil
	})[0]
	createDeployment(t, ns, pool, "big", "2500m", nil)
	env.AwaitPods(t, ns, "app=big", 1, timeout, func(p corev1.Pod) error {
		if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName == small.Spec.NodeName {
			return fmt.Errorf("phase %s on %s", p.Status.Phase, p.Spec.NodeName)
		}
		return nil
	})
	raisePolicy(t, ns, "1500m")

	framework.Eventually(t, timeout, "the command to delete node "+small.Spec.NodeName+" rejected by the fresh dry-run", func(ctx context.Context) (bool, error) {
		notes, err := env.EventNotes(ctx, disruption.EventVolatileRequestsChanged, small.Spec.NodeName)
		if err != nil || len(notes) == 0 {
			return false, err
		}
		t.Logf("rejected: %s", notes[0])
		if !strings.Contains(notes[0], "cpu=500m") || !strings.Contains(notes[0], "cpu=1500m") {
			return false, fmt.Errorf("event %q does not name the stale 500m and the fresh 1500m", notes[0])
		}
		return true, nil
	})
	framework.Eventually(t, timeout, "node "+small.Spec.NodeName+" Unconsolidatable with the predicted requests", func(ctx context.Context) (bool, error) {
		notes, err := env.EventNotes(ctx, disruption.EventUnconsolidatable, small.Spec.NodeName)
		if err != nil || len(notes) == 0 {
			return false, err
		}
		t.Logf("unconsolidatable: %s", notes[0])
		return true, nil
	})
	pod, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), small.Name, metav1.GetOptions{})
	if err != nil || pod.DeletionTimestamp != nil || pod.Spec.NodeName != small.Spec.NodeName {
		t.Errorf("the volatile pod was moved or evicted: %v", err)
	}
	ncs, err := env.Dynamic.Resource(framework.NodeClaims).List(t.Context(), metav1.ListOptions{LabelSelector: karpv1.NodePoolLabelKey + "=" + pool})
	if err != nil {
		t.Fatal(err)
	}
	for _, nc := range ncs.Items {
		if nc.GetDeletionTimestamp() != nil {
			t.Errorf("NodeClaim %s is being deleted", nc.GetName())
		}
	}
}
