package disruption

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/controller/disruption"
	"github.com/joinery-dev/joinery/e2e/framework"
)

// TestEmptyNodesGoInCommandsAsLargeAsTheBudget: twelve nodes emptied at once (their NodePool's
// budget held at 0 until all twelve are Empty and Consolidatable, then set). Under a 100 %
// budget one emptiness command removes all twelve. Under a budget of 3 nodes ceil(12/3) = 4
// commands of three remove them, never more than three NodeClaims disrupting at once (sampled
// over the whole run), and one pass chooses all four: every ConsolidationCandidate event comes
// before the first DisruptionTerminating. The loop used to choose one command per pass, so
// the next one waited for the one before to run.
//
// It is not parallel: other tests' commands would share the passes it looks at.
func TestEmptyNodesGoInCommandsAsLargeAsTheBudget(t *testing.T) {
	tests := []struct {
		budget string
		limit  int
		sizes  []int
	}{
		{budget: "100%", limit: 12, sizes: []int{12}},
		{budget: "3", limit: 3, sizes: []int{3, 3, 3, 3}},
	}
	for _, tt := range tests {
		t.Run("budget "+tt.budget, func(t *testing.T) {
			pool := framework.UniqueName("together")
			createNodePool(t, pool, `  disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: 5s, budgets: [{nodes: "0"}]}`)
			ns := env.Namespace(t)
			createDeployment(t, ns, pool, "web", 12, "700m", oneNodeEach)
			env.AwaitPods(t, ns, "app=web", 12, timeout, running)
			scale(t, ns, "web", 0)
			env.AwaitPods(t, ns, "app=web", 0, timeout, running)
			selector := karpv1.NodePoolLabelKey + "=" + pool
			env.AwaitNodeClaims(t, selector, 12, timeout, framework.NodeClaimCondition(karpv1.ConditionTypeEmpty, "True"))
			claims := env.AwaitNodeClaims(t, selector, 12, timeout, framework.NodeClaimCondition(karpv1.ConditionTypeConsolidatable, "True"))
			names := sets.New[string]()
			for _, nc := range claims {
				names.Insert(nc.GetName())
			}
			w := watch(t, pool)
			patchNodePool(t, pool, fmt.Sprintf(`{"spec": {"disruption": {"budgets": [{"nodes": %q}]}}}`, tt.budget))
			framework.Eventually(t, timeout, "every NodeClaim removed", func(ctx context.Context) (bool, error) {
				ncs, err := nodeClaims(ctx, pool)
				if err != nil {
					return false, err
				}
				return len(ncs) == 0, fmt.Errorf("NodeClaims %s", summary(ncs))
			})
			w.stop()
			if w.maxDisrupting > tt.limit {
				t.Errorf("%d NodeClaims disrupting at once, budget %d", w.maxDisrupting, tt.limit)
			}
			// Events are recorded asynchronously: wait for one per candidate.
			var chosen map[string]time.Time
			var terminating []time.Time
			framework.Eventually(t, timeout, "a ConsolidationCandidate and a DisruptionTerminating event on every NodeClaim", func(ctx context.Context) (bool, error) {
				var err error
				chosen, terminating, err = commandEvents(ctx, names)
				if err != nil {
					return false, err
				}
				covered := sets.New[string]()
				for cmd := range chosen {
					covered.Insert(commandCandidates(cmd)...)
				}
				if !covered.Equal(names) || len(terminating) < names.Len() {
					return false, fmt.Errorf("candidates named by %d commands: %d of %d; %d DisruptionTerminating", len(chosen), covered.Len(), names.Len(), len(terminating))
				}
				return true, nil
			})
			var sizes []int
			for cmd := range chosen {
				sizes = append(sizes, len(commandCandidates(cmd)))
			}
			slices.Sort(sizes)
			if !slices.Equal(sizes, tt.sizes) {
				t.Errorf("commands of %v NodeClaims, want %v: %q", sizes, tt.sizes, keys(chosen))
			}
			first := slices.MinFunc(terminating, func(a, b time.Time) int { return a.Compare(b) })
			for cmd, at := range chosen {
				if !at.Before(first) {
					t.Errorf("command %q chosen at %s, after the first NodeClaim was deleted (%s): not chosen with the others",
						cmd, at.Format(time.StampMicro), first.Format(time.StampMicro))
				}
			}
			if rejected, err := eventsAbout(t.Context(), disruption.EventConsolidationRejected, names); err != nil || len(rejected) > 0 {
				t.Errorf("ConsolidationRejected events %v (%v), want none", rejected, err)
			}
		})
	}
}

// commandEvents reads the events about names: each ConsolidationCandidate note (one per
// command) with when it was first recorded, and when each DisruptionTerminating was.
func commandEvents(ctx context.Context, names sets.Set[string]) (map[string]time.Time, []time.Time, error) {
	cands, err := eventsAbout(ctx, disruption.EventConsolidationCandidate, names)
	if err != nil {
		return nil, nil, err
	}
	chosen := map[string]time.Time{}
	for _, ev := range cands {
		at := eventTime(ev)
		if t, ok := chosen[ev.Note]; !ok || at.Before(t) {
			chosen[ev.Note] = at
		}
	}
	terms, err := eventsAbout(ctx, disruption.EventDisruptionTerminating, names)
	if err != nil {
		return nil, nil, err
	}
	var terminating []time.Time
	for _, ev := range terms {
		terminating = append(terminating, eventTime(ev))
	}
	return chosen, terminating, nil
}

// eventsAbout lists the events with reason about the NodeClaims named.
func eventsAbout(ctx context.Context, reason string, names sets.Set[string]) ([]eventsv1.Event, error) {
	list, err := env.Client.EventsV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing events: %w", err)
	}
	var out []eventsv1.Event
	for _, ev := range list.Items {
		if ev.Reason == reason && ev.Regarding.Kind == "NodeClaim" && names.Has(ev.Regarding.Name) {
			out = append(out, ev)
		}
	}
	return out, nil
}

// eventTime is when the controller recorded ev (its clock, to the microsecond).
func eventTime(ev eventsv1.Event) time.Time {
	if !ev.EventTime.IsZero() {
		return ev.EventTime.Time
	}
	return ev.CreationTimestamp.Time
}

// commandCandidates are the NodeClaims a ConsolidationCandidate note names ("Consolidation
// candidate: emptiness/Empty delete a,b,c").
func commandCandidates(note string) []string {
	_, rest, ok := strings.Cut(note, " delete ")
	if !ok {
		return nil
	}
	rest, _, _ = strings.Cut(rest, " ")
	return strings.Split(rest, ",")
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
