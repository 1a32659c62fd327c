package disruption

import (
	"context"
	"fmt"
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/controller/disruption"
	"github.com/joinery-dev/joinery/e2e/framework"
)

// TestUnderutilizedNodesConsolidate: 20 c5.large nodes each run one pod of a quarter of the
// node (20 "holder" pods, one per node, take the rest while the pods are placed, then go).
// The NodePool (WhenEmptyOrUnderutilized) consolidates to the fewest nodes that hold the 20
// pods, computed from the catalog; every pod keeps running, and the Deployment's PDB
// (minAvailable 19: one pod moves at a time) holds throughout: every change to its pods is
// watched and never fewer than 19 are available, and none is ever Unschedulable.
func TestUnderutilizedNodesConsolidate(t *testing.T) {
	t.Parallel()
	const nodes, minAvailable = 20, 19
	shape := poolShape{onDemand, []string{"c5.large"}}
	pool := framework.UniqueName("quarter")
	createNodePoolOf(t, pool, `  disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 5s, budgets: [{nodes: "100%"}]}`, shape)
	allocatable := instanceTypes(t)[shape.types[0]].Allocatable()
	alloc := allocatable.Cpu().MilliValue()
	webCPU := fmt.Sprintf("%dm", alloc/4)
	ns := env.Namespace(t)
	createDeployment(t, ns, pool, "holder", nodes, fmt.Sprintf("%dm", alloc-alloc/4), oneNodeEach)
	env.AwaitPods(t, ns, "app=holder", nodes, timeout, running)
	// Each node has room for one web pod, no more.
	createDeployment(t, ns, pool, "web", nodes, webCPU)
	web := env.AwaitPods(t, ns, "app=web", nodes, timeout, running)
	if on := podNodes(web); on.Len() != nodes {
		t.Fatalf("%d web pods on %d nodes, want one each", nodes, on.Len())
	}
	createPDB(t, ns, "web", "web", policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(minAvailable))})
	fewest := fewestNodes(t, shape.types, nodes, webCPU, "256Mi")
	w := watch(t, pool)
	pods := monitorPods(t, ns, "app=web")
	if err := env.Client.AppsV1().Deployments(ns).Delete(t.Context(), "holder", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	framework.Eventually(t, 2*timeout, fmt.Sprintf("NodePool consolidated to %d NodeClaims", fewest), func(ctx context.Context) (bool, error) {
		ncs, err := nodeClaims(ctx, pool)
		if err != nil {
			return false, err
		}
		if len(ncs) != fewest || len(live(ncs)) != fewest {
			return false, fmt.Errorf("%d NodeClaims: %s", len(ncs), summary(ncs))
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
		return len(list.Items) == nodes, fmt.Errorf("%d web pods", len(list.Items))
	})
	w.stop()
	fewestAvailable, unschedulable := pods.results()
	t.Logf("%d pods of %s cpu: %d NodeClaims → %d; at least %d pods available throughout", nodes, webCPU, nodes, fewest, fewestAvailable)
	if n, ok := disrupted(t, pool, karpv1.DisruptionReasonUnderutilized); ok && n != nodes-fewest {
		t.Errorf("%d NodeClaims consolidated (reason Underutilized), want %d", n, nodes-fewest)
	}
	if fewestAvailable < minAvailable {
		t.Errorf("only %d pods of the Deployment were available at one point; its PDB says minAvailable %d", fewestAvailable, minAvailable)
	}
	if len(unschedulable) > 0 {
		t.Errorf("pods Unschedulable during the move: %v", unschedulable)
	}
}

// TestShrunkPodsNodeIsReplacedByACheaperType: a pod of 3 cpu runs alone on its node; its
// request shrinks to 500m (a rollout onto the same node). While a PDB allows it no
// disruption, the node is left alone with an Unconsolidatable event naming the PDB, as in the
// seeds ("pdb default/inflate-pdb prevents pod evictions"); once the PDB is gone, the node is
// replaced by the cheapest type that holds the pod (from the catalog), launched before the
// pod moves, and the pod is never Unschedulable.
func TestShrunkPodsNodeIsReplacedByACheaperType(t *testing.T) {
	t.Parallel()
	const big, small = "3", "500m"
	pool := framework.UniqueName("shrink")
	createNodePool(t, pool, `  disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 5s, budgets: [{nodes: "100%"}]}`)
	cheapest, cheapestPrice := cheapestHolding(t, c5OnDemand.types, onDemand, small, "256Mi")
	ns := env.Namespace(t)
	w := watch(t, pool)
	createDeployment(t, ns, pool, "inflate", 1, big)
	env.AwaitPods(t, ns, "app=inflate", 1, timeout, running)
	ncs := mustNodeClaims(t, pool)
	if len(ncs) != 1 {
		t.Fatalf("NodeClaims %s, want one", summary(ncs))
	}
	first := ncs[0]
	firstType := first.Labels[corev1.LabelInstanceTypeStable]
	if p := typePrice(t, firstType, onDemand); p <= cheapestPrice {
		t.Fatalf("the pod of %s cpu runs on a %s ($%v), no dearer than the %s ($%v) that holds %s", big, firstType, p, cheapest, cheapestPrice, small)
	}
	createPDB(t, ns, "inflate-pdb", "inflate", policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(0))})
	setRequests(t, ns, "inflate", small)
	env.AwaitPods(t, ns, "app=inflate", 1, timeout, func(p corev1.Pod) error {
		if got := p.Spec.Containers[0].Resources.Requests.Cpu().String(); got != small {
			return fmt.Errorf("requests %s cpu", got)
		}
		return framework.RunningOn(first.Status.NodeName)(p)
	})

	awaitEvent(t, disruption.EventUnconsolidatable, first.Name, fmt.Sprintf("pdb %s/inflate-pdb prevents pod evictions", ns))
	if c := w.withReason(karpv1.DisruptionReasonUnderutilized); len(c) > 0 {
		t.Fatalf("consolidated %v despite the PDB", c)
	}

	pods := monitorPods(t, ns, "app=inflate")
	savings := sampleMax(t, "joinery_nodepool_consolidation_savings_per_hour", fmt.Sprintf("nodepool=%q", pool))
	if err := env.Client.PolicyV1().PodDisruptionBudgets(ns).Delete(t.Context(), "inflate-pdb", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var replacement karpv1.NodeClaim
	framework.Eventually(t, 2*timeout, "NodeClaim replaced by a "+cheapest, func(ctx context.Context) (bool, error) {
		ncs, err := nodeClaims(ctx, pool)
		if err != nil {
			return false, err
		}
		if len(ncs) != 1 || ncs[0].Name == first.Name || ncs[0].Status.NodeName == "" {
			return false, fmt.Errorf("NodeClaims %s", summary(ncs))
		}
		replacement = ncs[0]
		return true, nil
	})
	env.AwaitPods(t, ns, "app=inflate", 1, timeout, framework.RunningOn(replacement.Status.NodeName))
	w.stop()
	// While the command waited for validation, the controller's savings gauge showed it: the
	// node's price less the replacement's.
	if got, want := savings(), zonePrice(t, firstType, first.Labels[corev1.LabelTopologyZone], onDemand)-cheapestPrice; math.Abs(got-want) > 1e-9 {
		t.Errorf("joinery_nodepool_consolidation_savings_per_hour{nodepool=%q} peaked at %v, want %v", pool, got, want)
	}
	_, unschedulable := pods.results()
	t.Logf("%s (%s) replaced by %s (%s)", first.Name, firstType, replacement.Name, replacement.Labels[corev1.LabelInstanceTypeStable])
	if got := replacement.Labels[corev1.LabelInstanceTypeStable]; got != cheapest {
		t.Errorf("replaced by a %s, want the cheapest type that holds %s cpu, %s", got, small, cheapest)
	}
	if r := w.reasons[first.Name]; r != karpv1.DisruptionReasonUnderutilized {
		t.Errorf("%s disrupted with reason %q, want %s", first.Name, r, karpv1.DisruptionReasonUnderutilized)
	}
	if replacement.Annotations[disruption.ReplacementForAnnotationKey] == "" {
		t.Errorf("%s is not a consolidation replacement (no %s)", replacement.Name, disruption.ReplacementForAnnotationKey)
	}
	if len(w.deletedEarly) > 0 {
		t.Errorf("deleted before its replacement was initialized: %v", w.deletedEarly)
	}
	if len(unschedulable) > 0 {
		t.Errorf("pods Unschedulable during the move: %v", unschedulable)
	}
}

// TestSpotNodeIsDeletedNeverReplacedBySpot: two spot nodes each run one small pod, and both
// pods fit on either node (each node was sized for a "holder" pod, now gone); one node of a
// cheaper type would hold both. With SpotToSpotConsolidation off (its default), multi-node
// consolidation may not replace the two by one spot node, so single-node consolidation deletes
// one and its pod moves to the other, whose Unconsolidatable event then says spot-to-spot is
// disabled; no NodeClaim is ever created in the NodePool after the two (watched over the whole
// run). With the gate on, the two would be replaced by one cheaper spot node.
func TestSpotNodeIsDeletedNeverReplacedBySpot(t *testing.T) {
	t.Parallel()
	const holder, small = "3", "500m"
	shape := poolShape{karpv1.CapacityTypeSpot, c5OnDemand.types}
	pool := framework.UniqueName("spot")
	createNodePoolOf(t, pool, `  disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 5s, budgets: [{nodes: "100%"}]}`, shape)
	ns := env.Namespace(t)
	w := watch(t, pool)
	createDeployment(t, ns, pool, "holder", 2, holder, oneNodeEach)
	env.AwaitPods(t, ns, "app=holder", 2, timeout, running)
	createDeployment(t, ns, pool, "web", 2, small)
	if on := podNodes(env.AwaitPods(t, ns, "app=web", 2, timeout, running)); on.Len() != 2 {
		t.Fatalf("2 pods on %v, want one on each node", sets.List(on))
	}
	if err := env.Client.AppsV1().Deployments(ns).Delete(t.Context(), "holder", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	original := mustNodeClaims(t, pool)
	if len(original) != 2 {
		t.Fatalf("NodeClaims %s, want two", summary(original))
	}
	total := 0.0
	for _, nc := range original {
		if ct := nc.Labels[karpv1.CapacityTypeLabelKey]; ct != karpv1.CapacityTypeSpot {
			t.Fatalf("NodeClaim %s is %s, want spot", nc.Name, ct)
		}
		it := nc.Labels[corev1.LabelInstanceTypeStable]
		if n := podsPerNode(instanceTypes(t)[it], small, "256Mi"); n < 2 {
			t.Fatalf("a %s holds %d pods of %s cpu; the test needs both pods to fit on either node", it, n, small)
		}
		total += typePrice(t, it, karpv1.CapacityTypeSpot)
	}
	if cheaper, p := cheapestHolding(t, shape.types, karpv1.CapacityTypeSpot, "1", "512Mi"); p >= total {
		t.Fatalf("no spot node cheaper than the two ($%v) holds both pods (the cheapest, %s, costs $%v): spot-to-spot would not be tried", total, cheaper, p)
	}

	var survivor karpv1.NodeClaim
	framework.Eventually(t, 2*timeout, "one spot NodeClaim deleted", func(ctx context.Context) (bool, error) {
		ncs, err := nodeClaims(ctx, pool)
		if err != nil {
			return false, err
		}
		if len(ncs) != 1 {
			return false, fmt.Errorf("NodeClaims %s", summary(ncs))
		}
		survivor = ncs[0]
		return true, nil
	})
	// A replacement would have been launched before its candidates went.
	originals := sets.New(original[0].Name, original[1].Name)
	if others := w.seenNames().Difference(originals); others.Len() > 0 {
		t.Fatalf("NodeClaims created while spot nodes were consolidated: %v", sets.List(others))
	}
	env.AwaitPods(t, ns, "app=web", 2, timeout, framework.RunningOn(survivor.Status.NodeName))
	if n, ok := disrupted(t, pool, karpv1.DisruptionReasonUnderutilized); ok && n != 1 {
		t.Errorf("%d NodeClaims disrupted as Underutilized, want the one deleted", n)
	}
	// Single-node consolidation looked at the survivor and refused to replace it with spot.
	awaitEvent(t, disruption.EventUnconsolidatable, survivor.Name, "SpotToSpotConsolidation is disabled")
	if others := w.seenNames().Difference(originals); others.Len() > 0 {
		t.Errorf("NodeClaims created after the spot node was deleted: %v", sets.List(others))
	}
}

// podNodes returns the nodes the pods run on.
func podNodes(pods []corev1.Pod) sets.Set[string] {
	out := sets.New[string]()
	for _, p := range pods {
		out.Insert(p.Spec.NodeName)
	}
	return out
}
