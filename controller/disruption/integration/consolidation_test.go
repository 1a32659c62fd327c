package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/controller/disruption"
)

func consolidating(policy karpv1.ConsolidationPolicy) karpv1.Disruption {
	return karpv1.Disruption{ConsolidationPolicy: policy, ConsolidateAfter: karpv1.DurationOf(0), Budgets: []karpv1.Budget{{Nodes: "100%"}}}
}

// TestConsolidationDeletesUnderutilizedNode: the underutilized node's pod fits on the other
// node, so consolidation deletes it without launching anything.
func TestConsolidationDeletesUnderutilizedNode(t *testing.T) {
	w := newWorldWith(t, consolidating(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized))
	w.node("idle", "4", false)
	w.node("roomy", "4", false) // not Consolidatable: consolidateAfter has not passed for it
	w.consolidatable("idle")
	w.pod("web-1", "idle", "500m")
	w.pod("busy", "roomy", "2")
	startLoop(t)
	await(t, "underutilized NodeClaim deleted", func() bool { return !w.exists("idle") })
	if n := len(w.replacements()); n != 0 {
		t.Errorf("replacements = %d, want 0", n)
	}
	if !w.exists("roomy") {
		t.Error("the destination node was deleted")
	}
}

// TestConsolidationReplacesWithCheaperType: a c5.xlarge holding one small pod, nothing else to
// move to: it is replaced by one cheaper type, never c5.xlarge, and deleted once the
// replacement is initialized.
func TestConsolidationReplacesWithCheaperType(t *testing.T) {
	w := newWorldWith(t, consolidating(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized))
	w.node("big", "4", false)
	w.consolidatable("big")
	w.pod("web-1", "big", "500m")
	startLoop(t)
	await(t, "a replacement", func() bool { return len(w.replacements()) == 1 })
	r := w.replacements()[0]
	if got := r.Annotations[disruption.ReplacementForAnnotationKey]; got == "" {
		t.Fatal("replacement not annotated with its command")
	}
	for _, req := range r.Spec.Requirements {
		if req.Key == "node.kubernetes.io/instance-type" && (len(req.Values) == 0 || slices.Contains(req.Values, "c5.xlarge")) {
			t.Errorf("replacement instance types %v: want cheaper types than c5.xlarge, not c5.xlarge itself", req.Values)
		}
	}
	if !w.exists("big") {
		t.Fatal("candidate deleted before its replacement was initialized")
	}
	w.initialize(r)
	await(t, "replaced NodeClaim deleted", func() bool { return !w.exists("big") })
}

// TestWhenEmptyLeavesUnderutilizedNodesAlone: the same underutilized node as above under
// consolidationPolicy WhenEmpty stays through several passes.
func TestWhenEmptyLeavesUnderutilizedNodesAlone(t *testing.T) {
	w := newWorldWith(t, consolidating(karpv1.ConsolidationPolicyWhenEmpty))
	w.node("idle", "4", false)
	w.node("roomy", "4", false)
	w.consolidatable("idle")
	w.consolidatable("roomy")
	w.pod("web-1", "idle", "500m")
	w.pod("busy", "roomy", "500m")
	startLoop(t)
	time.Sleep(3 * time.Second) // several passes of the loop (every 500 ms)
	if !w.exists("idle") || !w.exists("roomy") || len(w.replacements()) != 0 {
		t.Errorf("WhenEmpty NodePool consolidated: idle %v roomy %v replacements %d", w.exists("idle"), w.exists("roomy"), len(w.replacements()))
	}
}

// TestPDBBlockedNodeIsUnconsolidatable: a PDB that allows no disruption holds the node; it
// stays and gets an Unconsolidatable event naming the PDB.
func TestPDBBlockedNodeIsUnconsolidatable(t *testing.T) {
	w := newWorldWith(t, consolidating(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized))
	w.node("held", "4", false)
	w.node("roomy", "4", false)
	w.consolidatable("held")
	w.pod("web-1", "held", "500m")
	w.pod("busy", "roomy", "2")
	w.create(&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: w.pool + "-pdb", Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(0)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": w.pool}}}})
	startLoop(t)
	want := "pdb default/" + w.pool + "-pdb prevents pod evictions"
	await(t, "an Unconsolidatable event", func() bool {
		var list eventsv1.EventList
		if err := admin.List(context.Background(), &list, client.InNamespace(metav1.NamespaceDefault)); err != nil {
			t.Fatal(err)
		}
		for _, e := range list.Items {
			if e.Reason == disruption.EventUnconsolidatable && e.Regarding.Name == w.pool+"-held" && strings.Contains(e.Note, want) {
				return true
			}
		}
		return false
	})
	if !w.exists("held") {
		t.Error("PDB-blocked node was consolidated")
	}
}

// hasEvent reports whether an event with reason about object name has a note containing want.
func hasEvent(t *testing.T, reason, name, want string) bool {
	t.Helper()
	var list eventsv1.EventList
	if err := admin.List(context.Background(), &list, client.InNamespace(metav1.NamespaceDefault)); err != nil {
		t.Fatal(err)
	}
	for _, e := range list.Items {
		if e.Reason == reason && e.Regarding.Name == name && strings.Contains(e.Note, want) {
			return true
		}
	}
	return false
}

// TestBalancedApprovesADeleteWorthIt: under Balanced, deleting a node that is half the
// NodePool's cost and half its disruption scores 1 and goes ahead, with a
// ConsolidationApproved event on its NodeClaim.
func TestBalancedApprovesADeleteWorthIt(t *testing.T) {
	w := newWorldWith(t, consolidating(karpv1.ConsolidationPolicyBalanced))
	w.node("idle", "4", false)
	w.node("roomy", "4", false)
	w.consolidatable("idle")
	w.pod("web-1", "idle", "500m")
	w.pod("busy", "roomy", "2")
	startLoop(t)
	await(t, "the NodeClaim deleted", func() bool { return !w.exists("idle") })
	await(t, "a ConsolidationApproved event", func() bool {
		return hasEvent(t, disruption.EventConsolidationApproved, w.pool+"-idle", "score 1.00 (saves 50.0% of nodepool "+w.pool+"'s cost for 50.0% of its disruption")
	})
}

// TestBalancedRejectsADeleteNotWorthIt: the same kind of delete, but the node holds ten of the
// NodePool's twelve pods and a third of its cost: 0.33 ÷ 0.79 = 0.42 < 0.5, so the node stays
// and gets an Unconsolidatable event with the score.
func TestBalancedRejectsADeleteNotWorthIt(t *testing.T) {
	w := newWorldWith(t, consolidating(karpv1.ConsolidationPolicyBalanced))
	w.node("crowded", "4", false)
	w.node("roomy", "4", false)
	w.node("spare", "4", false)
	w.consolidatable("crowded")
	for i := range 10 {
		w.pod(fmt.Sprintf("web-%d", i), "crowded", "100m")
	}
	w.pod("busy", "roomy", "2")
	startLoop(t)
	await(t, "an Unconsolidatable event with the score", func() bool {
		return hasEvent(t, disruption.EventUnconsolidatable, w.pool+"-crowded", "Balanced consolidation: savings do not justify the disruption, score 0.42")
	})
	if !w.exists("crowded") || len(w.replacements()) != 0 {
		t.Errorf("rejected move executed: crowded exists %v, replacements %d", w.exists("crowded"), len(w.replacements()))
	}
}
