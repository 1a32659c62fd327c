package disruption

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/controller/disruption"
	"github.com/joinery-dev/joinery/e2e/framework"
)

// TestScaleDownRemovesEmptyNodes: 30 pods get nodes; scaled to 2, one kept on each of two
// nodes, the nodes left without pods are deleted once consolidateAfter has passed, in
// parallel up to the budget. The NodePool is WhenEmpty, so the two underutilized nodes (one
// node would hold both pods) are left alone: consolidation evaluates the cluster three more
// times after they became consolidatable and disrupts nothing, and the pods stay put.
func TestScaleDownRemovesEmptyNodes(t *testing.T) {
	t.Parallel()
	const kept = 2
	pool := framework.UniqueName("empty")
	createNodePool(t, pool, `  disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: 5s, budgets: [{nodes: "100%"}]}`)
	ns := env.Namespace(t)
	createDeployment(t, ns, pool, "web", 30, "700m")
	env.AwaitPods(t, ns, "app=web", 30, timeout, running)
	before := len(mustNodeClaims(t, pool))
	hosting := keepOnePodOnEachOf(t, ns, "app=web", kept)
	if before <= kept {
		t.Fatalf("30 pods on %d NodeClaims: none would be left empty by keeping %d pods", before, kept)
	}
	if fewest := fewestNodes(t, c5OnDemand.types, kept, "700m", "256Mi"); kept <= fewest {
		t.Fatalf("the fewest nodes that hold %d pods is %d: nothing to leave alone", kept, fewest)
	}
	w := watch(t, pool)
	scale(t, ns, "web", kept)
	stayed := env.AwaitPods(t, ns, "app=web", kept, timeout, running)
	framework.Eventually(t, timeout, "only NodeClaims hosting pods left", func(ctx context.Context) (bool, error) {
		ncs, err := nodeClaims(ctx, pool)
		if err != nil {
			return false, err
		}
		var extra []string
		for _, nc := range ncs {
			if !hosting.Has(nc.Status.NodeName) {
				extra = append(extra, nc.Name)
			}
		}
		if len(extra) > 0 {
			return false, fmt.Errorf("NodeClaims without pods: %v", extra)
		}
		return true, nil
	})
	left := env.AwaitNodeClaims(t, karpv1.NodePoolLabelKey+"="+pool, hosting.Len(), timeout,
		framework.NodeClaimCondition(karpv1.ConditionTypeConsolidatable, "True"))
	t.Logf("30 pods on %d NodeClaims; %d pods on %d, consolidatable", before, kept, len(left))
	if n, ok := disrupted(t, pool, karpv1.DisruptionReasonEmpty); ok && n != before-len(left) {
		t.Errorf("%d NodeClaims disrupted as Empty, want the %d without pods", n, before-len(left))
	}
	awaitEvaluations(t, methodSingleNodeConsol, 3)
	w.stop()

	after := mustNodeClaims(t, pool)
	if len(after) != len(left) {
		t.Errorf("NodeClaims %d → %d after consolidation looked: %s", len(left), len(after), summary(after))
	}
	for _, nc := range after {
		if nc.DeletionTimestamp != nil || nc.Annotations[disruption.CommandAnnotationKey] != "" {
			t.Errorf("NodeClaim %s disrupted (command %q)", nc.Name, nc.Annotations[disruption.CommandAnnotationKey])
		}
	}
	if n, _ := disrupted(t, pool, karpv1.DisruptionReasonUnderutilized); n > 0 || len(w.withReason(karpv1.DisruptionReasonUnderutilized)) > 0 {
		t.Errorf("WhenEmpty NodePool consolidated %d NodeClaims (reason Underutilized): %v", n, w.withReason(karpv1.DisruptionReasonUnderutilized))
	}
	env.AwaitPods(t, ns, "app=web", kept, timeout, func(p corev1.Pod) error {
		for _, k := range stayed {
			if k.Name == p.Name && k.Spec.NodeName == p.Spec.NodeName && running(p) == nil {
				return nil
			}
		}
		return fmt.Errorf("on %s: not one of the pods kept, where it was", p.Spec.NodeName)
	})
}

// TestScaleDownConsolidatesToFewestNodes: 30 pods get nodes; scaled to 3, one kept on each of
// three nodes, the NodePool (WhenEmptyOrUnderutilized) ends on the fewest nodes that hold the
// three pods — computed from the catalog's instance types — and no pod is ever Unschedulable
// (watched over the whole move). How long after consolidateAfter it got there is logged (the
// issue's goal is 60 s), not asserted: a loaded machine stretches every step.
//
// It is not parallel: the disruption loop runs one command at a time for the whole cluster,
// so other tests' commands would stand in its way.
func TestScaleDownConsolidatesToFewestNodes(t *testing.T) {
	const consolidateAfter = 10 * time.Second
	pool := framework.UniqueName("fewest")
	createNodePool(t, pool, fmt.Sprintf(`  disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: %s, budgets: [{nodes: "100%%"}]}`, consolidateAfter))
	ns := env.Namespace(t)
	createDeployment(t, ns, pool, "web", 30, "700m")
	env.AwaitPods(t, ns, "app=web", 30, timeout, running)
	before := mustNodeClaims(t, pool)
	keepOnePodOnEachOf(t, ns, "app=web", 3)
	fewest := fewestNodes(t, c5OnDemand.types, 3, "700m", "256Mi")
	w := watch(t, pool)
	pods := monitorPods(t, ns, "app=web")
	scale(t, ns, "web", 3)
	env.AwaitPods(t, ns, "app=web", 3, timeout, running)
	scaledDown := time.Now() // the last pod event, give or take a poll
	var reached time.Duration
	framework.Eventually(t, 2*timeout, fmt.Sprintf("NodePool on %d NodeClaims", fewest), func(ctx context.Context) (bool, error) {
		ncs, err := nodeClaims(ctx, pool)
		if err != nil {
			return false, err
		}
		if len(ncs) != fewest || len(live(ncs)) != fewest {
			return false, fmt.Errorf("NodeClaims %s", summary(ncs))
		}
		list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err
		}
		for _, p := range list.Items {
			if running(p) != nil || p.DeletionTimestamp != nil {
				return false, fmt.Errorf("pod %s %s on %q", p.Name, p.Status.Phase, p.Spec.NodeName)
			}
		}
		reached = time.Since(scaledDown)
		return len(list.Items) == 3, fmt.Errorf("%d pods", len(list.Items))
	})
	w.stop()
	_, unschedulable := pods.results()
	after := mustNodeClaims(t, pool)
	t.Logf("30 pods on %d NodeClaims; 3 pods on %s, %s after the scale-down; candidates by reason %v",
		len(before), summary(after), reached.Round(time.Second), w.reasons)
	if goal := consolidateAfter + 60*time.Second; reached > goal {
		t.Logf("slower than the goal of consolidateAfter (%s) + 60 s: %s", consolidateAfter, reached.Round(time.Second))
	}
	if len(unschedulable) > 0 {
		t.Errorf("pods Unschedulable during the move: %v", unschedulable)
	}
	if len(w.deletedEarly) > 0 {
		t.Errorf("deleted before their replacements were initialized: %v", w.deletedEarly)
	}
	if n, ok := disrupted(t, pool, karpv1.DisruptionReasonUnderutilized); ok && n == 0 {
		t.Error("no NodeClaim was consolidated (reason Underutilized): emptiness alone cannot leave one node per pod")
	}
}

// TestDriftReplacesEveryNodeClaimOneAtATime: the NodePool's template label changes, every
// NodeClaim is replaced by one with the new label; with budgets [{nodes: "1"}] no more than
// one NodeClaim of the NodePool is ever disrupting at once (sampled over the whole run), and
// no candidate is deleted before its replacement is initialized.
func TestDriftReplacesEveryNodeClaimOneAtATime(t *testing.T) {
	t.Parallel()
	pool := framework.UniqueName("drift")
	createNodePool(t, pool, `  disruption: {consolidateAfter: Never, budgets: [{nodes: "1"}]}`)
	ns := env.Namespace(t)
	createDeployment(t, ns, pool, "web", 3, "500m", oneNodeEach)
	env.AwaitPods(t, ns, "app=web", 3, timeout, running)
	original := sets.New[string]()
	for _, nc := range mustNodeClaims(t, pool) {
		original.Insert(nc.Name)
	}
	w := watch(t, pool)
	patchNodePool(t, pool, `{"spec": {"template": {"metadata": {"labels": {"joinery.dev/e2e-drift": "v2"}}}}}`)
	framework.Eventually(t, 2*timeout, "every NodeClaim replaced", func(ctx context.Context) (bool, error) {
		ncs, err := nodeClaims(ctx, pool)
		if err != nil {
			return false, err
		}
		for _, nc := range ncs {
			if original.Has(nc.Name) || nc.Labels["joinery.dev/e2e-drift"] != "v2" {
				return false, fmt.Errorf("%s not replaced yet", nc.Name)
			}
		}
		return len(ncs) >= 3, nil
	})
	env.AwaitPods(t, ns, "app=web", 3, timeout, running)
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("NodeClaims %v replaced; at most %d disrupting at once; candidates %d", sets.List(original), w.maxDisrupting, len(w.seenCandidates))
	if w.maxDisrupting > 1 {
		t.Errorf("up to %d NodeClaims disrupting at once, budget is 1", w.maxDisrupting)
	}
	if len(w.deletedEarly) > 0 {
		t.Errorf("deleted before their replacements were initialized: %v", w.deletedEarly)
	}
	if len(w.seenCandidates) == 0 {
		t.Error("no disruption command was ever seen")
	}
}

// TestExpiredNodeClaimIsReplaced: with expireAfter: 30s the NodeClaim is deleted once it
// expires, capacity for its pod is launched at that moment (pre-planned), and the pod runs
// again there.
func TestExpiredNodeClaimIsReplaced(t *testing.T) {
	t.Parallel()
	pool := framework.UniqueName("expire")
	createNodePool(t, pool, `  disruption: {consolidateAfter: Never}`)
	patchNodePool(t, pool, `{"spec": {"template": {"spec": {"expireAfter": "30s"}}}}`)
	ns := env.Namespace(t)
	createDeployment(t, ns, pool, "web", 1, "500m")
	env.AwaitPods(t, ns, "app=web", 1, timeout, running)
	first := mustNodeClaims(t, pool)
	if len(first) != 1 {
		t.Fatalf("NodeClaims = %d, want 1", len(first))
	}
	framework.Eventually(t, timeout, "expired NodeClaim replaced", func(ctx context.Context) (bool, error) {
		ncs, err := nodeClaims(ctx, pool)
		if err != nil {
			return false, err
		}
		for _, nc := range ncs {
			if nc.Name == first[0].Name {
				return false, fmt.Errorf("%s still there", nc.Name)
			}
		}
		return len(ncs) > 0, nil
	})
	// Capacity was pre-planned when the NodeClaim expired: the pod runs on that replacement.
	var replacement karpv1.NodeClaim
	for _, nc := range mustNodeClaims(t, pool) {
		if nc.Annotations[disruption.ReplacementForAnnotationKey] == disruption.PreplanPrefix+"expiration-"+first[0].Name {
			replacement = nc
		}
	}
	if replacement.Name == "" {
		t.Fatalf("no NodeClaim pre-planned for the expired %s", first[0].Name)
	}
	env.AwaitPods(t, ns, "app=web", 1, timeout, func(p corev1.Pod) error {
		if err := running(p); err != nil {
			return err
		}
		ncs, err := nodeClaims(t.Context(), pool)
		if err != nil {
			return err
		}
		for _, nc := range ncs {
			if nc.Name == replacement.Name && nc.Status.NodeName != "" && p.Spec.NodeName == nc.Status.NodeName {
				return nil
			}
		}
		return fmt.Errorf("on %s, want the pre-planned %s's node", p.Spec.NodeName, replacement.Name)
	})
}

// TestDoNotDisruptNodeAndBlockingPDBKeepTheirNodes: the NodePool drifts, but the node
// annotated karpenter.sh/do-not-disrupt and the node whose pod a PDB protects stay, each with
// a DisruptionBlocked event naming why.
func TestDoNotDisruptNodeAndBlockingPDBKeepTheirNodes(t *testing.T) {
	t.Parallel()
	pool := framework.UniqueName("blocked")
	createNodePool(t, pool, `  disruption: {consolidateAfter: Never, budgets: [{nodes: "100%"}]}`)
	ns := env.Namespace(t)
	createDeployment(t, ns, pool, "pinned", 1, "500m", oneNodeEach)
	createDeployment(t, ns, pool, "guarded", 1, "500m", oneNodeEach, func(d *appsv1.Deployment) {
		// keep it off the pinned pod's node
		d.Spec.Template.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(
			d.Spec.Template.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution,
			corev1.PodAffinityTerm{TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pinned"}}})
	})
	pinned := env.AwaitPods(t, ns, "app=pinned", 1, timeout, running)[0]
	guarded := env.AwaitPods(t, ns, "app=guarded", 1, timeout, running)[0]
	if pinned.Spec.NodeName == guarded.Spec.NodeName {
		t.Fatalf("both pods on %s", pinned.Spec.NodeName)
	}
	annotation := fmt.Sprintf(`{"metadata": {"annotations": {%q: "true"}}}`, karpv1.DoNotDisruptAnnotationKey)
	if _, err := env.Client.CoreV1().Nodes().Patch(t.Context(), pinned.Spec.NodeName, types.MergePatchType, []byte(annotation), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: ns}, Spec: policyv1.PodDisruptionBudgetSpec{
		MaxUnavailable: ptr.To(intstr.FromInt32(0)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}}}
	if _, err := env.Client.PolicyV1().PodDisruptionBudgets(ns).Create(t.Context(), pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := mustNodeClaims(t, pool)
	patchNodePool(t, pool, `{"spec": {"template": {"metadata": {"labels": {"joinery.dev/e2e-drift": "v2"}}}}}`)

	awaitBlockedEvent(t, pinned.Spec.NodeName, "node is annotated with karpenter.sh/do-not-disrupt")
	awaitBlockedEvent(t, guarded.Spec.NodeName, fmt.Sprintf("pdb %s/guarded prevents pod evictions", ns))
	// The drift method evaluates the blocked nodes twice more (its evaluation count rises by
	// two after both were reported blocked): it looked again, and still disrupts nothing.
	awaitDriftEvaluations(t, 2)
	after := mustNodeClaims(t, pool)
	if len(after) != len(before) {
		t.Fatalf("NodeClaims %d → %d", len(before), len(after))
	}
	for i := range after {
		if after[i].Name != before[i].Name || after[i].DeletionTimestamp != nil {
			t.Errorf("NodeClaim %s disrupted", before[i].Name)
		}
	}
}

// TestNodeRepairReplacesUnknownNode: with NodeRepair on (TestMain), a node whose kubelet
// stops reporting (kwok lets go of it, so its Ready goes Unknown) is replaced once Unknown
// for longer than the (shortened) toleration; its pod runs on a new node.
func TestNodeRepairReplacesUnknownNode(t *testing.T) {
	t.Parallel()
	pool := framework.UniqueName("repair")
	createNodePool(t, pool, `  disruption: {consolidateAfter: Never}`)
	ns := env.Namespace(t)
	createDeployment(t, ns, pool, "web", 1, "500m")
	pod := env.AwaitPods(t, ns, "app=web", 1, timeout, running)[0]
	first := mustNodeClaims(t, pool)[0]
	// Stop kwok standing in for the kubelet: the node lease is no longer renewed and
	// kube-controller-manager marks the node's Ready Unknown.
	if _, err := env.Client.CoreV1().Nodes().Patch(t.Context(), pod.Spec.NodeName, types.MergePatchType,
		[]byte(`{"metadata": {"annotations": {"kwok.x-k8s.io/node": null}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 2*timeout, "unhealthy NodeClaim replaced", func(ctx context.Context) (bool, error) {
		ncs, err := nodeClaims(ctx, pool)
		if err != nil {
			return false, err
		}
		for _, nc := range ncs {
			if nc.Name == first.Name {
				return false, fmt.Errorf("%s still there (deleting: %t)", nc.Name, nc.DeletionTimestamp != nil)
			}
		}
		return true, nil
	})
	env.AwaitPods(t, ns, "app=web", 1, timeout, func(p corev1.Pod) error {
		if err := running(p); err != nil {
			return err
		}
		if p.Spec.NodeName == pod.Spec.NodeName {
			return fmt.Errorf("still on the unhealthy node")
		}
		return nil
	})
}
