package disruption

import (
	"context"
	"fmt"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/controller/disruption"
	"github.com/joinery-dev/joinery/e2e/framework"
)

// refusedFor is how long the admission policy refuses the NodePool's NodeClaim deletes once
// the drift command is waiting to delete its candidate.
const refusedFor = 30 * time.Second

// TestCommandFinishesAfterDeletesWereRefused (issue 22 item 7): a ValidatingAdmissionPolicy
// refuses every delete of the NodePool's NodeClaims while a drift command replaces its node.
// The command cannot delete its candidate; once the policy is gone it finishes without a
// restart: the candidate is deleted, and no node of the NodePool keeps the disrupted taint.
// On main the command gave up at the first refused delete and the candidate stayed marked and
// tainted until the next restart or leader change.
func TestCommandFinishesAfterDeletesWereRefused(t *testing.T) {
	t.Parallel()
	pool := framework.UniqueName("strand")
	createNodePool(t, pool, `  disruption: {consolidateAfter: Never, budgets: [{nodes: "1"}]}`)
	ns := env.Namespace(t)
	createDeployment(t, ns, pool, "web", 1, "500m")
	env.AwaitPods(t, ns, "app=web", 1, timeout, running)
	original := mustNodeClaims(t, pool)
	if len(original) != 1 {
		t.Fatalf("%d NodeClaims, want 1", len(original))
	}
	candidate := original[0].Name

	refuse := refuseNodeClaimDeletes(t, pool)
	patchNodePool(t, pool, `{"spec": {"template": {"metadata": {"labels": {"joinery.dev/e2e-drift": "v2"}}}}}`)
	// The command marks the candidate, its replacement initializes, and the delete is refused.
	framework.Eventually(t, 2*timeout, "the drift command waiting to delete its candidate", func(ctx context.Context) (bool, error) {
		ncs, err := nodeClaims(ctx, pool)
		if err != nil {
			return false, err
		}
		marked, replaced := false, false
		for _, nc := range ncs {
			if nc.Name == candidate {
				if nc.DeletionTimestamp != nil {
					return false, fmt.Errorf("candidate %s deleted while deletes are refused", candidate)
				}
				marked = nc.Annotations[disruption.CommandAnnotationKey] != ""
			} else if nc.Annotations[disruption.ReplacementForAnnotationKey] != "" && initialized(&nc) {
				replaced = true
			}
		}
		return marked && replaced, fmt.Errorf("candidate marked %t, replacement initialized %t", marked, replaced)
	})
	// Refused for a while longer: the queue's retries are refused too.
	time.Sleep(refusedFor)
	if nc, err := env.Dynamic.Resource(framework.NodeClaims).Get(t.Context(), candidate, metav1.GetOptions{}); err != nil || nc.GetDeletionTimestamp() != nil {
		t.Fatalf("candidate %s gone or deleting while deletes were refused (err %v): the policy did not hold", candidate, err)
	}
	refuse()
	allowed := time.Now()

	framework.Eventually(t, 2*timeout, "the candidate deleted and no disrupted taint left", func(ctx context.Context) (bool, error) {
		ncs, err := nodeClaims(ctx, pool)
		if err != nil {
			return false, err
		}
		nodes := sets.New[string]()
		for _, nc := range ncs {
			if nc.Name == candidate && nc.DeletionTimestamp == nil {
				return false, fmt.Errorf("candidate %s not deleted yet", candidate)
			}
			if nc.DeletionTimestamp == nil && nc.Status.NodeName != "" {
				nodes.Insert(nc.Status.NodeName)
			}
		}
		for name := range nodes {
			n, err := env.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, taint := range n.Spec.Taints {
				if taint.Key == karpv1.DisruptedTaintKey {
					return false, fmt.Errorf("node %s still tainted %s", name, taint.Key)
				}
			}
		}
		return true, nil
	})
	// The bound is the 60 s, logged rather than asserted: a loaded machine may be
	// slower, and what matters is that it finished without a restart.
	t.Logf("command finished %s after deletes were allowed again (target 60s)", time.Since(allowed).Round(time.Second))
	env.AwaitPods(t, ns, "app=web", 1, timeout, running)
}

// refuseNodeClaimDeletes installs a ValidatingAdmissionPolicy and its binding refusing the
// deletes of pool's NodeClaims; the returned func (also run at cleanup) removes them.
func refuseNodeClaimDeletes(t *testing.T, pool string) func() {
	t.Helper()
	name := "refuse-delete-" + pool
	policies := env.Client.AdmissionregistrationV1()
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Delete},
					Rule:       admissionv1.Rule{APIGroups: []string{"karpenter.sh"}, APIVersions: []string{"*"}, Resources: []string{"nodeclaims"}},
				},
			}}},
			MatchConditions: []admissionv1.MatchCondition{{Name: "in-pool",
				Expression: fmt.Sprintf(`has(oldObject.metadata.labels) && oldObject.metadata.labels[%q] == %q`, karpv1.NodePoolLabelKey, pool)}},
			Validations: []admissionv1.Validation{{Expression: "false", Message: "e2e: NodeClaim deletes refused"}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}},
	}
	if _, err := policies.ValidatingAdmissionPolicies().Create(t.Context(), policy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create policy: %v", err)
	}
	if _, err := policies.ValidatingAdmissionPolicyBindings().Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create binding: %v", err)
	}
	remove := func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := policies.ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete binding: %v", err)
		}
		if err := policies.ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete policy: %v", err)
		}
	}
	t.Cleanup(remove)
	// The policy takes effect once the API server has loaded it: wait until a delete of a
	// NodeClaim of the pool is refused (a dry run, so nothing is deleted).
	framework.Eventually(t, timeout, "the policy refusing deletes", func(ctx context.Context) (bool, error) {
		ncs, err := nodeClaims(ctx, pool)
		if err != nil || len(ncs) == 0 {
			return false, err
		}
		err = env.Dynamic.Resource(framework.NodeClaims).Delete(ctx, ncs[0].Name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsInvalid(err) || apierrors.IsForbidden(err), fmt.Errorf("dry-run delete: %v", err)
	})
	return remove
}

func initialized(nc *karpv1.NodeClaim) bool {
	return meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized)
}
