package lifecycle

import (
	"context"
	"fmt"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/joinery-dev/joinery/e2e/framework"
)

// unregistrableLabel marks the nodes the test's admission policy keeps from registering.
const unregistrableLabel = "joinery.dev/e2e-unregistrable"

// refuseRegistration installs a ValidatingAdmissionPolicy that refuses every update giving a
// node labelled unregistrableLabel=group the karpenter.sh/registered label: its kubelet
// "cannot join". It returns a function that lifts the refusal.
func refuseRegistration(t *testing.T, group string) (lift func()) {
	t.Helper()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: group},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"nodes"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "!has(object.metadata.labels) || !('karpenter.sh/registered' in object.metadata.labels)",
				Message:    "e2e: this node may not register",
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: group},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        group,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{ObjectSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{unregistrableLabel: group},
			}},
		},
	}
	api := env.Client.AdmissionregistrationV1()
	if _, err := api.ValidatingAdmissionPolicies().Create(t.Context(), policy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create admission policy: %v", err)
	}
	if _, err := api.ValidatingAdmissionPolicyBindings().Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create admission policy binding: %v", err)
	}
	lifted := false
	lift = func() {
		if lifted {
			return
		}
		lifted = true
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if err := api.ValidatingAdmissionPolicyBindings().Delete(ctx, group, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete admission policy binding: %v", err)
		}
		if err := api.ValidatingAdmissionPolicies().Delete(ctx, group, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete admission policy: %v", err)
		}
	}
	t.Cleanup(lift)
	return lift
}

// TestNodeThatNeverRegistersIsReplaced: a pending pod gets a NodeClaim whose instance launches
// but whose node is refused registration. After the registration TTL (30 s here) the NodeClaim
// is deleted with a RegistrationTimeout event, its instance terminated, and the pod gets a
// replacement NodeClaim whose node registers.
func TestNodeThatNeverRegistersIsReplaced(t *testing.T) {
	withShortTimers(t)
	group := framework.UniqueName("unregistered")
	lift := refuseRegistration(t, group)
	createNodePool(t, group, fmt.Sprintf("%s: %q", unregistrableLabel, group))
	ns := env.Namespace(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{"joinery.dev/e2e-group": group},
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
			}}},
		},
	}
	if _, err := env.Client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}

	selector := "karpenter.sh/nodepool=" + group
	launched := env.AwaitNodeClaims(t, selector, 1, readyTimeout, framework.NodeClaimCondition("Launched", "True"))
	first := launched[0].GetName()
	begin := time.Now()
	framework.AwaitGone(t, 2*time.Minute, "nodeclaim "+first+" that never registered", func(ctx context.Context) error {
		_, err := env.Dynamic.Resource(framework.NodeClaims).Get(ctx, first, metav1.GetOptions{})
		return err
	})
	t.Logf("unregistered NodeClaim %s deleted %s after launch was seen", first, time.Since(begin).Round(time.Second))
	lift()
	framework.AwaitGone(t, readyTimeout, "instance of "+first, func(ctx context.Context) error {
		_, err := env.Client.CoreV1().Nodes().Get(ctx, first, metav1.GetOptions{})
		return err
	})
	events, err := env.Client.CoreV1().Events(metav1.NamespaceAll).List(t.Context(), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=NodeClaim,involvedObject.name=" + first + ",reason=RegistrationTimeout",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Items) == 0 {
		t.Errorf("no RegistrationTimeout event on nodeclaim %s", first)
	}

	// The replacement registers, and the pod runs on it.
	running := env.AwaitPods(t, ns, "", 1, 2*time.Minute, func(p corev1.Pod) error {
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("pod %s is %s", p.Name, p.Status.Phase)
		}
		return nil
	})
	if node := running[0].Spec.NodeName; node == first {
		t.Errorf("pod runs on the node that never registered")
	}
	replacements := env.AwaitNodeClaims(t, selector, 1, readyTimeout, framework.NodeClaimCondition("Registered", "True"))
	if replacements[0].GetName() == first {
		t.Errorf("nodeclaim %s was not replaced", first)
	}
}
