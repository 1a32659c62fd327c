package disruption

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/controller/disruption"
	"github.com/joinery-dev/joinery/e2e/framework"
)

// The cases of issue 22's safety rules on the live cluster. Each test has its own NodePools
// and group label, so they run in parallel with the rest of the suite.

// consolidating is the disruption block of most NodePools here: consolidation as soon as
// Consolidatable, no budget in the way.
const consolidating = `  disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 5s, budgets: [{nodes: "100%"}]}`

// TestPodsNeverMoveOntoAnUninitializedNodeClaim (issue 22 item 1): a NodePool's NodeClaim
// carries a startup taint nothing removes, so it registers but never initializes; a pod
// waits for it and leaves room beside it. A node of another NodePool whose pod would fit in
// that room (and nowhere cheaper) is kept: consolidation refuses the move with an event
// naming the uninitialized NodeClaim, as Karpenter does ("would schedule against
// uninitialized nodeclaim").
func TestPodsNeverMoveOntoAnUninitializedNodeClaim(t *testing.T) {
	t.Parallel()
	group := framework.UniqueName("unsettled")
	createPool(t, pool{name: group, spec: consolidating, capacityTypes: []string{onDemand}, types: []string{"c5.large"}})
	ns := env.Namespace(t)
	w := watch(t, group)
	createDeployment(t, ns, group, "web", 1, "500m")
	env.AwaitPods(t, ns, "app=web", 1, timeout, running)
	original := mustNodeClaims(t, group)
	if len(original) != 1 {
		t.Fatalf("NodeClaims %s, want one", summary(original))
	}
	candidate := original[0]

	// The stuck NodePool's nodes carry the same group label, so the web pod may run there.
	stuck := group + "-stuck"
	createPool(t, pool{name: stuck, group: group, labels: map[string]string{"joinery.dev/e2e-stuck": "true"},
		spec:          `  disruption: {consolidateAfter: Never}`,
		templateSpec:  `      startupTaints: [{key: joinery.dev/e2e-never-removed, effect: NoSchedule}]`,
		capacityTypes: []string{onDemand}, types: []string{"c5.large"}})
	createDeployment(t, ns, group, "waiting", 1, "500m", func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.NodeSelector["joinery.dev/e2e-stuck"] = "true"
	})
	var dest karpv1.NodeClaim
	framework.Eventually(t, timeout, "a NodeClaim of the stuck NodePool registered", func(ctx context.Context) (bool, error) {
		ncs, err := nodeClaims(ctx, stuck)
		if err != nil {
			return false, err
		}
		for _, nc := range ncs {
			if nc.Status.NodeName != "" {
				dest = nc
				return true, nil
			}
		}
		return false, fmt.Errorf("NodeClaims %s", summary(ncs))
	})

	awaitEventOf(t, []string{disruption.EventUnconsolidatable, disruption.EventDisruptionBlocked}, []string{candidate.Name},
		"would schedule against uninitialized nodeclaim "+dest.Name)
	// Consolidation looks twice more and still keeps the node.
	awaitEvaluations(t, methodSingleNodeConsol, 2)
	w.stop()
	if now := mustNodeClaims(t, stuck); len(now) != 1 || initialized(&now[0]) {
		t.Fatalf("stuck NodeClaims %s: want one, never initialized", summary(now))
	}
	after := mustNodeClaims(t, group)
	if len(after) != 1 || after[0].Name != candidate.Name || after[0].DeletionTimestamp != nil {
		t.Errorf("NodeClaims %s, want %s kept", summary(after), candidate.Name)
	}
	if c := w.withReason(karpv1.DisruptionReasonUnderutilized); len(c) > 0 {
		t.Errorf("consolidation chose %v with its pod bound for the uninitialized %s", c, dest.Name)
	}
	env.AwaitPods(t, ns, "app=web", 1, timeout, framework.RunningOn(candidate.Status.NodeName))
}

// TestSpotExhaustedNeverLaunchesADearerNode (issue 22 item 2): with every spot offering of
// m5.large recorded exhausted (the unavailable-offerings record an insufficient-capacity
// launch writes; the kwok provider honours it like a cloud out of capacity), a NodePool of
// spot and on-demand m5.large launches on-demand. Its node's only cheaper replacement is
// spot, which cannot launch: consolidation launches nothing (no dearer on-demand node, no
// doomed spot one) and keeps the node. Once spot is back, the node is replaced by a spot
// node whose NodeClaim is pinned to spot, so a new shortage cannot fall back to on-demand.
func TestSpotExhaustedNeverLaunchesADearerNode(t *testing.T) {
	t.Parallel()
	const itype = "m5.large" // no other test of the suite launches it: the record is cluster-wide
	name := framework.UniqueName("ice")
	restore := exhaustSpot(t, itype)
	createPool(t, pool{name: name, spec: consolidating, capacityTypes: []string{karpv1.CapacityTypeSpot, onDemand}, types: []string{itype}})
	ns := env.Namespace(t)
	w := watch(t, name)
	createDeployment(t, ns, name, "web", 1, "500m")
	env.AwaitPods(t, ns, "app=web", 1, timeout, running)
	original := mustNodeClaims(t, name)
	if len(original) != 1 {
		t.Fatalf("NodeClaims %s, want one", summary(original))
	}
	candidate := original[0]
	if ct := candidate.Labels[karpv1.CapacityTypeLabelKey]; ct != onDemand {
		t.Fatalf("launched %s with spot recorded exhausted, want on-demand", ct)
	}
	odPrice := zonePrice(t, itype, candidate.Labels[corev1.LabelTopologyZone], onDemand)
	if spot := typePrice(t, itype, karpv1.CapacityTypeSpot); spot >= odPrice {
		t.Fatalf("spot %s ($%v) is not cheaper than on-demand ($%v): nothing to test", itype, spot, odPrice)
	}
	// Consolidation looks at the node (Consolidatable) and evaluates it again twice.
	env.AwaitNodeClaims(t, karpv1.NodePoolLabelKey+"="+name, 1, timeout, framework.NodeClaimCondition(karpv1.ConditionTypeConsolidatable, "True"))
	awaitEvaluations(t, methodSingleNodeConsol, 3)
	if others := w.seenNames().Delete(candidate.Name); others.Len() > 0 {
		t.Fatalf("NodeClaims launched while spot was exhausted: %v (%s)", sets.List(others), summary(mustNodeClaims(t, name)))
	}
	if nc := mustNodeClaims(t, name); len(nc) != 1 || nc[0].DeletionTimestamp != nil {
		t.Fatalf("NodeClaims %s, want %s kept", summary(nc), candidate.Name)
	}

	restore()
	var replacement karpv1.NodeClaim
	framework.Eventually(t, 2*timeout, "the on-demand node replaced by spot", func(ctx context.Context) (bool, error) {
		ncs, err := nodeClaims(ctx, name)
		if err != nil {
			return false, err
		}
		if len(ncs) != 1 || ncs[0].Name == candidate.Name || ncs[0].Status.NodeName == "" {
			return false, fmt.Errorf("NodeClaims %s", summary(ncs))
		}
		replacement = ncs[0]
		return true, nil
	})
	env.AwaitPods(t, ns, "app=web", 1, timeout, framework.RunningOn(replacement.Status.NodeName))
	w.stop()
	if ct := replacement.Labels[karpv1.CapacityTypeLabelKey]; ct != karpv1.CapacityTypeSpot {
		t.Errorf("replaced by %s, want spot", ct)
	}
	for _, r := range replacement.Spec.Requirements {
		if r.Key == karpv1.CapacityTypeLabelKey && (r.Operator != corev1.NodeSelectorOpIn || !slices.Equal(r.Values, []string{karpv1.CapacityTypeSpot})) {
			t.Errorf("replacement %s requires %s %s %v, want pinned to spot", replacement.Name, r.Key, r.Operator, r.Values)
		}
	}
	if replacement.Annotations[disruption.ReplacementForAnnotationKey] == "" {
		t.Errorf("%s is not a consolidation replacement", replacement.Name)
	}
	// Every NodeClaim launched in the NodePool costs less than the node it replaced.
	for n, nc := range w.seen {
		if n == candidate.Name {
			continue
		}
		if p := zonePrice(t, nc.Labels[corev1.LabelInstanceTypeStable], nc.Labels[corev1.LabelTopologyZone], nc.Labels[karpv1.CapacityTypeLabelKey]); p >= odPrice {
			t.Errorf("NodeClaim %s launched at $%v, not less than the $%v it replaced", n, p, odPrice)
		}
	}
}

// exhaustSpot records every spot offering of itype unavailable for an hour in the cluster's
// unavailable-offerings record; the returned func (also run at cleanup) removes them.
func exhaustSpot(t *testing.T, itype string) func() {
	t.Helper()
	env.RequireLocal(t) // the controller's namespace
	ns := env.Cluster.ControllerNamespace()
	var keys []string
	for _, o := range instanceTypes(t)[itype].Offerings {
		if o.CapacityType() == karpv1.CapacityTypeSpot {
			keys = append(keys, cloudprovider.OfferingKey{CapacityType: karpv1.CapacityTypeSpot, InstanceType: itype, Zone: o.Zone()}.ConfigMapKey())
		}
	}
	until := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	patch := func(ctx context.Context, value any) error {
		data := map[string]any{}
		for _, k := range keys {
			data[k] = value
		}
		body, err := json.Marshal(map[string]any{"data": data})
		if err != nil {
			return err
		}
		cms := env.Client.CoreV1().ConfigMaps(ns)
		_, err = cms.Patch(ctx, cloudprovider.UnavailableOfferingsConfigMap, types.MergePatchType, body, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) && value != nil {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cloudprovider.UnavailableOfferingsConfigMap, Namespace: ns}, Data: map[string]string{}}
			for _, k := range keys {
				cm.Data[k] = until
			}
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
		}
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	if err := patch(t.Context(), until); err != nil {
		t.Fatalf("recording spot %s exhausted: %v", itype, err)
	}
	restored := false
	restore := func() {
		if restored {
			return
		}
		restored = true
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := patch(ctx, nil); err != nil {
			t.Errorf("removing spot %s from the unavailable record: %v", itype, err)
		}
	}
	t.Cleanup(restore)
	return restore
}

// TestEmptyBudgetKeepsEmptyNodes (issue 22 item 3): a NodePool consolidating underutilized
// nodes, with a budget of 0 for reason Empty: a node left empty is kept, although the budget
// for Underutilized allows every node, since empty nodes are Emptiness's alone (Karpenter's
// rule); nothing is disrupted for either reason (the other nodes' pods are do-not-disrupt).
// With that budget removed, the empty node is deleted as Empty.
func TestEmptyBudgetKeepsEmptyNodes(t *testing.T) {
	t.Parallel()
	name := framework.UniqueName("emptybudget")
	createNodePool(t, name, `  disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 5s, budgets: [{nodes: "0", reasons: [Empty]}, {nodes: "100%"}]}`)
	ns := env.Namespace(t)
	// One pod per node, each not to be disrupted: the two nodes kept busy are no candidates, and
	// their pods cannot move onto the empty node (a move consolidation may rightly make).
	createDeployment(t, ns, name, "web", 3, "500m", oneNodeEach, podAnnotated(karpv1.DoNotDisruptAnnotationKey, "true"))
	env.AwaitPods(t, ns, "app=web", 3, timeout, running)
	hosting := keepOnePodOnEachOf(t, ns, "app=web", 2)
	w := watch(t, name)
	scale(t, ns, "web", 2)
	env.AwaitPods(t, ns, "app=web", 2, timeout, running)
	var empty karpv1.NodeClaim
	for _, nc := range mustNodeClaims(t, name) {
		if !hosting.Has(nc.Status.NodeName) {
			empty = nc
		}
	}
	if empty.Name == "" {
		t.Fatalf("no NodeClaim left without pods: %s", summary(mustNodeClaims(t, name)))
	}
	env.AwaitNodeClaims(t, karpv1.NodePoolLabelKey+"="+name, 3, timeout, framework.NodeClaimCondition(karpv1.ConditionTypeConsolidatable, "True"))
	awaitEvaluations(t, methodSingleNodeConsol, 3)
	w.stop()
	after := mustNodeClaims(t, name)
	if len(live(after)) != 3 {
		t.Fatalf("NodeClaims %s, want all three kept (%s empty)", summary(after), empty.Name)
	}
	for _, reason := range []string{karpv1.DisruptionReasonEmpty, karpv1.DisruptionReasonUnderutilized} {
		if n, _ := disrupted(t, name, reason); n > 0 || len(w.withReason(reason)) > 0 {
			t.Errorf("%d NodeClaims disrupted as %s: %v", n, reason, w.withReason(reason))
		}
	}

	patchNodePool(t, name, `{"spec": {"disruption": {"budgets": [{"nodes": "100%"}]}}}`)
	framework.Eventually(t, 2*timeout, "the empty NodeClaim deleted once the budget allows it", func(ctx context.Context) (bool, error) {
		ncs, err := nodeClaims(ctx, name)
		if err != nil {
			return false, err
		}
		for _, nc := range ncs {
			if nc.Name == empty.Name {
				return false, fmt.Errorf("NodeClaims %s", summary(ncs))
			}
		}
		return true, nil
	})
	if n, ok := disrupted(t, name, karpv1.DisruptionReasonEmpty); ok && n != 1 {
		t.Errorf("%d NodeClaims disrupted as Empty, want the one without pods", n)
	}
}

// TestMultiNodeConsolidationPerNodePoolOnLiveCluster (issue 22 item 11): two NodePools whose
// nodes no pod of the other may use (each pod selects its NodePool's group label), 6 m5.large
// nodes each (the issue says 10; 6 keeps the suite's time in check and needs the same
// search), each running one pod of 60 % of the node's cpu, and their nodes interleaved in
// disruption order (pod-deletion-cost). The pods fit on no other node; several nodes of one
// NodePool are replaced by one c5 node for less (2 or 3 by a c5.xlarge, 4 to 6 by a
// c5.2xlarge), so every prefix of one NodePool's candidates is a command and both NodePools
// end on the fewest nodes the catalog allows. Karpenter's global prefix search would find
// nothing here, as every prefix of two or more mixes the two NodePools, and its single-node
// fallback would only swap each m5.large for a c5.large
// (controller/disruption TestMultiNodeConsolidationPerNodePool runs both searches on a
// like shape: two interleaved NodePools of nodes that only a bigger, cheaper node can merge).
func TestMultiNodeConsolidationPerNodePoolOnLiveCluster(t *testing.T) {
	t.Parallel()
	const nodes = 6
	shape := poolShape{onDemand, []string{"m5.large", "c5.large", "c5.xlarge", "c5.2xlarge"}}
	its := instanceTypes(t)
	alloc := its["m5.large"].Allocatable()
	webCPU := fmt.Sprintf("%dm", alloc.Cpu().MilliValue()*6/10)
	// The holders' memory rules out a c5.large, so each node is an m5.large.
	holderCPU, holderMemory := fmt.Sprintf("%dm", alloc.Cpu().MilliValue()*4/10-10), "5Gi"
	fewest := fewestNodes(t, shape.types, nodes, webCPU, "256Mi")
	if fewest >= nodes/2 {
		t.Fatalf("the fewest nodes for %d pods of %s is %d: nothing for multi-node consolidation to show", nodes, webCPU, fewest)
	}
	ns := env.Namespace(t)
	names := []string{framework.UniqueName("team-a"), framework.UniqueName("team-b")}
	watchers := map[string]*watcher{}
	for _, name := range names {
		createNodePoolOf(t, name, consolidating, shape)
		// Holders, one per node, keep each node a c5.large with room for one web pod.
		createDeployment(t, ns, name, name+"-holder", nodes, holderCPU, oneNodeEach, func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse(holderMemory)
		})
	}
	for _, name := range names {
		env.AwaitPods(t, ns, "app="+name+"-holder", nodes, timeout, running)
		createDeployment(t, ns, name, name+"-web", nodes, webCPU)
	}
	var web [2][]corev1.Pod
	for i, name := range names {
		web[i] = env.AwaitPods(t, ns, "app="+name+"-web", nodes, timeout, running)
		if on := podNodes(web[i]); on.Len() != nodes {
			t.Fatalf("%d web pods of %s on %d nodes, want one each", nodes, name, on.Len())
		}
		for _, nc := range mustNodeClaims(t, name) {
			if it := nc.Labels[corev1.LabelInstanceTypeStable]; it != "m5.large" {
				t.Fatalf("NodeClaim %s of %s is a %s, want m5.large", nc.Name, name, it)
			}
		}
	}
	// Interleave the NodePools in disruption order: a's k-th node, b's k-th, a's k+1-th...
	for k := range nodes {
		for i := range names {
			patch := fmt.Sprintf(`{"metadata": {"annotations": {%q: "%d"}}}`, disruption.PodDeletionCostAnnotationKey, (2*k+i)*10_000_000)
			if _, err := env.Client.CoreV1().Pods(ns).Patch(t.Context(), web[i][k].Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	monitors := map[string]*podMonitor{}
	for _, name := range names {
		watchers[name] = watch(t, name)
		monitors[name] = monitorPods(t, ns, "app="+name+"-web")
	}
	for _, name := range names {
		if err := env.Client.AppsV1().Deployments(ns).Delete(t.Context(), name+"-holder", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	framework.Eventually(t, 3*timeout, fmt.Sprintf("both NodePools on %d NodeClaims", fewest), func(ctx context.Context) (bool, error) {
		var state []string
		done := true
		for _, name := range names {
			ncs, err := nodeClaims(ctx, name)
			if err != nil {
				return false, err
			}
			state = append(state, name+": "+summary(ncs))
			done = done && len(ncs) == fewest && len(live(ncs)) == fewest
		}
		if !done {
			return false, fmt.Errorf("%s", strings.Join(state, "; "))
		}
		for _, name := range names {
			list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name + "-web"})
			if err != nil {
				return false, err
			}
			for _, p := range list.Items {
				if running(p) != nil || p.DeletionTimestamp != nil {
					return false, fmt.Errorf("pod %s %s on %q", p.Name, p.Status.Phase, p.Spec.NodeName)
				}
			}
			if len(list.Items) != nodes {
				return false, fmt.Errorf("%d pods of %s", len(list.Items), name)
			}
		}
		return true, nil
	})
	for _, name := range names {
		w := watchers[name]
		w.stop()
		_, unschedulable := monitors[name].results()
		t.Logf("%s: %d m5.large → %s; largest command %d candidates", name, nodes, summary(mustNodeClaims(t, name)), w.largestCommand())
		if n := w.largestCommand(); n < 2 {
			t.Errorf("%s: no command disrupted more than %d node: multi-node consolidation did not act", name, n)
		}
		if len(w.deletedEarly) > 0 {
			t.Errorf("%s: deleted before their replacements were initialized: %v", name, w.deletedEarly)
		}
		if len(unschedulable) > 0 {
			t.Errorf("%s: pods Unschedulable during the move: %v", name, unschedulable)
		}
	}
}

// TestBalancedTakesAMoveWorthItAndRefusesOneNotWorthIt (issue 22 item 12): two NodePools
// with consolidationPolicy Balanced. In the first, two c5.large nodes each run one small pod
// that fits beside the other: deleting one saves half the NodePool's cost for half its
// disruption (score 1.00), so it is deleted, with a ConsolidationApproved event giving the
// score. In the second, a full c5.xlarge whose pod may not be disrupted and a c5.xlarge
// running six small pods that a c5.large would hold: replacing it saves a quarter of the
// NodePool's cost for 7/9 of its disruption (score 0.32, below the 0.50 needed), so it is
// refused with an Unconsolidatable event giving the score, and both nodes stay.
func TestBalancedTakesAMoveWorthItAndRefusesOneNotWorthIt(t *testing.T) {
	t.Parallel()
	const balanced = `  disruption: {consolidationPolicy: Balanced, consolidateAfter: 5s, budgets: [{nodes: "100%"}]}`
	its := instanceTypes(t)
	ns := env.Namespace(t)

	// Worth it.
	worth := framework.UniqueName("worth")
	createPool(t, pool{name: worth, spec: balanced, capacityTypes: []string{onDemand}, types: []string{"c5.large"}})
	largeAlloc := its["c5.large"].Allocatable()
	largeCPU := largeAlloc.Cpu().MilliValue()
	createDeployment(t, ns, worth, "worth-holder", 2, fmt.Sprintf("%dm", largeCPU-500), oneNodeEach)
	env.AwaitPods(t, ns, "app=worth-holder", 2, timeout, running)
	createDeployment(t, ns, worth, "worth-web", 2, "500m")
	if on := podNodes(env.AwaitPods(t, ns, "app=worth-web", 2, timeout, running)); on.Len() != 2 {
		t.Fatalf("2 pods on %v, want one on each node", sets.List(on))
	}

	// Not worth it.
	notWorth := framework.UniqueName("notworth")
	createPool(t, pool{name: notWorth, spec: balanced, capacityTypes: []string{onDemand}, types: []string{"c5.large", "c5.xlarge"}})
	xlargeAlloc := its["c5.xlarge"].Allocatable()
	xlargeCPU := xlargeAlloc.Cpu().MilliValue()
	createDeployment(t, ns, notWorth, "full", 1, fmt.Sprintf("%dm", xlargeCPU-100), podAnnotated(karpv1.DoNotDisruptAnnotationKey, "true"))
	full := env.AwaitPods(t, ns, "app=full", 1, timeout, running)[0]
	createDeployment(t, ns, notWorth, "notworth-holder", 1, "2500m") // a c5.large cannot hold it
	holder := env.AwaitPods(t, ns, "app=notworth-holder", 1, timeout, running)[0]
	createDeployment(t, ns, notWorth, "small", 6, "200m")
	small := env.AwaitPods(t, ns, "app=small", 6, timeout, framework.RunningOn(holder.Spec.NodeName))
	if n := podsPerNode(its["c5.large"], "200m", "256Mi"); n < len(small) {
		t.Fatalf("a c5.large holds %d pods of 200m, the test needs %d", n, len(small))
	}
	var target karpv1.NodeClaim
	for _, nc := range mustNodeClaims(t, notWorth) {
		if it := nc.Labels[corev1.LabelInstanceTypeStable]; it != "c5.xlarge" {
			t.Fatalf("NodeClaim %s is a %s, want c5.xlarge", nc.Name, it)
		}
		if nc.Status.NodeName == holder.Spec.NodeName {
			target = nc
		} else if nc.Status.NodeName != full.Spec.NodeName {
			t.Fatalf("NodeClaim %s runs neither pod", nc.Name)
		}
	}

	worthBefore := mustNodeClaims(t, worth)
	wWorth, wNot := watch(t, worth), watch(t, notWorth)
	for _, d := range []string{"worth-holder", "notworth-holder"} {
		if err := env.Client.AppsV1().Deployments(ns).Delete(t.Context(), d, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	framework.Eventually(t, 2*timeout, "one node of "+worth+" consolidated", func(ctx context.Context) (bool, error) {
		ncs, err := nodeClaims(ctx, worth)
		if err != nil {
			return false, err
		}
		return len(ncs) == 1 && len(live(ncs)) == 1, fmt.Errorf("NodeClaims %s", summary(ncs))
	})
	objects := []string{worth}
	for _, nc := range worthBefore {
		objects = append(objects, nc.Name)
	}
	awaitEventOf(t, []string{disruption.EventConsolidationApproved}, objects, "score 1.00")
	awaitEventOf(t, []string{disruption.EventUnconsolidatable}, []string{target.Name}, "Balanced consolidation: savings do not justify the disruption, score 0.")
	awaitEvaluations(t, methodSingleNodeConsol, 2)
	wWorth.stop()
	wNot.stop()
	if c := wWorth.withReason(karpv1.DisruptionReasonUnderutilized); len(c) != 1 {
		t.Errorf("%s: candidates %v consolidated, want one", worth, c)
	}
	after := mustNodeClaims(t, notWorth)
	if len(live(after)) != 2 {
		t.Errorf("%s: NodeClaims %s, want both kept", notWorth, summary(after))
	}
	if c := wNot.withReason(karpv1.DisruptionReasonUnderutilized); len(c) > 0 {
		t.Errorf("%s: %v consolidated although the move is not worth it", notWorth, c)
	}
	env.AwaitPods(t, ns, "app=small", 6, timeout, framework.RunningOn(holder.Spec.NodeName))
}

// awaitEventOf waits for an event with one of the reasons about one of the named objects
// whose note contains want.
func awaitEventOf(t *testing.T, reasons, names []string, want string) {
	t.Helper()
	framework.Eventually(t, timeout, fmt.Sprintf("%v event on %v saying %q", reasons, names, want), func(ctx context.Context) (bool, error) {
		var seen []string
		for _, reason := range reasons {
			for _, name := range names {
				notes, err := env.EventNotes(ctx, reason, name)
				if err != nil {
					return false, err
				}
				for _, n := range notes {
					if strings.Contains(n, want) {
						return true, nil
					}
				}
				seen = append(seen, notes...)
			}
		}
		return false, fmt.Errorf("events: %q", seen)
	})
}
