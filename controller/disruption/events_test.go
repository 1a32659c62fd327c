package disruption

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

func drain(rec *events.FakeRecorder) []string {
	var out []string
	for len(rec.Events) > 0 {
		out = append(out, <-rec.Events)
	}
	return out
}

func matching(evs []string, parts ...string) []string {
	var out []string
next:
	for _, e := range evs {
		for _, p := range parts {
			if !strings.Contains(e, p) {
				continue next
			}
		}
		out = append(out, e)
	}
	return out
}

// TestConsolidationCandidateAndRejectedEvents: a consolidation command gets Karpenter's
// ConsolidationCandidate on its candidate's Node and NodeClaim when chosen, and
// ConsolidationRejected with the reason when validation drops it.
func TestConsolidationCandidateAndRejectedEvents(t *testing.T) {
	its := testCatalog(t, 0)
	objs := []client.Object{testNodePool("default", onDemandOnly)}
	objs = append(objs, pair(testNode("a", "default", typed(its, "large", "on-demand")))...)
	objs = append(objs, cpuPod("vpa", "node-a", "500m"))
	c := newClient(t, objs...)
	rec := events.NewFakeRecorder(100)
	m := &SingleNodeConsolidation{Consolidation: Consolidation{Simulator: newSolverSimulator(t, its), InstanceTypes: benchTypes(its)}}
	ctrl := New(c, c, rec, nil, []Method{m}, Options{ConsolidationValidationDelay: time.Millisecond, Volatile: &rejectVolatile{}})
	if _, err := ctrl.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	evs := drain(rec)
	if got := matching(evs, EventConsolidationCandidate, "Consolidation candidate: single-node-consolidation/Underutilized replace a"); len(got) != 2 {
		t.Errorf("ConsolidationCandidate events %q, want one on the node and one on the NodeClaim; all: %q", got, evs)
	}
	if got := matching(evs, EventConsolidationRejected, "Consolidation rejected: single-node-consolidation/Underutilized replace a", "reason: volatile requests of ReplicaSet default/vpa changed"); len(got) != 2 {
		t.Errorf("ConsolidationRejected events %q, want one on the node and one on the NodeClaim; all: %q", got, evs)
	}
}

// TestNodePoolDisruptionBlockedEvent: a NodePool whose budget allows nothing for a reason
// gets Karpenter's NodePool-level DisruptionBlocked, at most once a minute per reason.
func TestNodePoolDisruptionBlockedEvent(t *testing.T) {
	np := testNodePool("default", budgets(karpv1.Budget{Nodes: "0", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonDrifted}}))
	empty := testNodePool("idle", budgets(karpv1.Budget{Nodes: "0"}))
	c := newClient(t, objects(np, empty, pair(testNode("a", "default")))...)
	rec := events.NewFakeRecorder(100)
	clk := clocktesting.NewFakeClock(epoch)
	ctrl := New(c, c, rec, clk, nil, Options{})
	step := func() []string {
		if _, err := ctrl.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
		return matching(drain(rec), EventDisruptionBlocked)
	}
	want := "No allowed disruptions for disruption reason Drifted due to blocking budget"
	if got := step(); len(got) != 1 || !strings.Contains(got[0], want) {
		t.Fatalf("events %q, want one %q (none for the NodePool without nodes)", got, want)
	}
	if got := step(); len(got) != 0 {
		t.Errorf("repeated within a minute: %q", got)
	}
	clk.Step(time.Minute)
	if got := step(); len(got) != 1 {
		t.Errorf("events after a minute %q, want the event again", got)
	}
}

// TestInvalidBudgetsAreReported: a budget that does not parse or never fires sets the
// NodePool's DisruptionBudgetsValid=False naming it, with one event however many passes run;
// fixing it sets the condition True.
func TestInvalidBudgetsAreReported(t *testing.T) {
	tests := []struct {
		name   string
		budget karpv1.Budget
		want   string
	}{
		{name: "schedule does not parse", budget: karpv1.Budget{Nodes: "0", Schedule: ptr.To("0 25 * * *"), Duration: &metav1.Duration{Duration: time.Hour}},
			want: "budget 1 has a schedule that does not parse"},
		{name: "schedule never fires", budget: karpv1.Budget{Nodes: "0", Schedule: ptr.To("0 0 30 2 *"), Duration: &metav1.Duration{Duration: time.Hour}},
			want: `budget 1 schedule "0 0 30 2 *" never fires`},
		{name: "schedule without duration", budget: karpv1.Budget{Nodes: "0", Schedule: ptr.To("@daily")},
			want: "budget 1 has a schedule but no duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			np := testNodePool("default", budgets(karpv1.Budget{Nodes: "10%"}, tt.budget))
			c := newClient(t, objects(np, pair(testNode("a", "default")))...)
			rec := events.NewFakeRecorder(100)
			ctrl := New(c, c, rec, clocktesting.NewFakeClock(epoch), nil, Options{})
			var evs []string
			for range 3 {
				if _, err := ctrl.Step(context.Background()); err != nil {
					t.Fatal(err)
				}
				evs = append(evs, matching(drain(rec), EventInvalidDisruptionBudget)...)
			}
			if len(evs) != 1 || !strings.Contains(evs[0], tt.want) {
				t.Errorf("events %q, want exactly one saying %q", evs, tt.want)
			}
			got := &karpv1.NodePool{}
			if err := c.Get(context.Background(), client.ObjectKey{Name: "default"}, got); err != nil {
				t.Fatal(err)
			}
			cond := meta.FindStatusCondition(got.Status.Conditions, ConditionTypeDisruptionBudgetsValid)
			if cond == nil || cond.Status != metav1.ConditionFalse || !strings.Contains(cond.Message, tt.want) {
				t.Fatalf("condition %+v, want False saying %q", cond, tt.want)
			}
			// Fixed: the condition turns True, no new event.
			got.Spec.Disruption.Budgets = got.Spec.Disruption.Budgets[:1]
			if err := c.Update(context.Background(), got); err != nil {
				t.Fatal(err)
			}
			if _, err := ctrl.Step(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := c.Get(context.Background(), client.ObjectKey{Name: "default"}, got); err != nil {
				t.Fatal(err)
			}
			if cond := meta.FindStatusCondition(got.Status.Conditions, ConditionTypeDisruptionBudgetsValid); cond == nil || cond.Status != metav1.ConditionTrue {
				t.Errorf("condition after the fix %+v, want True", cond)
			}
		})
	}
}
