// Package budget computes NodePool disruption budgets: how many of a NodePool's nodes may be
// disrupted for a reason right now. Pure functions over the NodePool, node counts and the
// time; the disruption controller and the allowed-disruptions metric use them.
//
// The arithmetic is the seeds' ("NodePool Disruption Budgets"): a budget's value is its node
// count, or roundup(total × percentage) for a percentage; the allowed disruptions are the
// minimum over the active budgets that apply to the reason (all reasons when a budget lists
// none), less the nodes being deleted and the nodes not ready, never below zero. A NodePool
// without budgets has one, nodes: 10%. A budget with a schedule is active from each time the
// cron expression (UTC) fires for its duration.
package budget

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// DefaultNodes is the budget a NodePool without budgets gets.
const DefaultNodes = "10%"

// Counts are a NodePool's nodes as budgets see them.
type Counts struct {
	// Total is every initialized node the NodePool owns, including those being deleted or
	// not Ready; NodeClaims still launching or initializing are not counted (Karpenter's rule).
	Total int
	// Deleting are initialized nodes being deleted for any reason, or already chosen for
	// disruption.
	Deleting int
	// NotReady are initialized nodes (not deleting) whose Node is not Ready.
	NotReady int
}

// Nodes returns the number of nodes budget b allows out of total, before subtracting the
// nodes already disrupting.
func Nodes(b karpv1.Budget, total int) (int, error) {
	text := b.Nodes
	if text == "" {
		text = DefaultNodes
	}
	if pct, ok := strings.CutSuffix(text, "%"); ok {
		p, err := strconv.Atoi(pct)
		if err != nil || p < 0 || p > 100 {
			return 0, fmt.Errorf("budget nodes %q: not a percentage from 0%% to 100%%", text)
		}
		// roundup(total × percentage), in integers so 19 × 20% is exactly 3.8 → 4.
		return int(math.Ceil(float64(total*p) / 100)), nil
	}
	n, err := strconv.Atoi(text)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("budget nodes %q: not a count or a percentage", text)
	}
	return n, nil
}

// Active reports whether b applies at now: always without a schedule, else from each time its
// schedule fires until its duration has passed ([fire, fire+duration)).
func Active(b karpv1.Budget, now time.Time) (bool, error) {
	if b.Schedule == nil {
		return true, nil
	}
	if b.Duration == nil {
		return false, fmt.Errorf("budget schedule %q has no duration", *b.Schedule)
	}
	s, err := ParseSchedule(*b.Schedule)
	if err != nil {
		return false, err
	}
	// The last firing at or before now is in the window iff the first firing after
	// now − duration is not after now.
	next := s.Next(now.Add(-b.Duration.Duration))
	return !next.IsZero() && !next.After(now), nil
}

// AppliesTo reports whether b limits disruptions for reason.
func AppliesTo(b karpv1.Budget, reason string) bool {
	return len(b.Reasons) == 0 || slices.Contains(b.Reasons, karpv1.DisruptionReason(reason))
}

// Budgets returns np's budgets, or the default one when it has none.
func Budgets(np *karpv1.NodePool) []karpv1.Budget {
	if len(np.Spec.Disruption.Budgets) == 0 {
		return []karpv1.Budget{{Nodes: DefaultNodes}}
	}
	return np.Spec.Disruption.Budgets
}

// Allowed returns how many more of np's nodes may be disrupted for reason at now. A budget
// that cannot be evaluated (a bad schedule the schema let through) counts as allowing none,
// and its error is returned with the result, so a mistake stops disruption instead of
// letting everything through.
func Allowed(np *karpv1.NodePool, reason string, c Counts, now time.Time) (int, error) {
	allowed := math.MaxInt
	var errs []error
	for _, b := range Budgets(np) {
		if !AppliesTo(b, reason) {
			continue
		}
		active, err := Active(b, now)
		if err != nil {
			errs = append(errs, err)
			allowed = 0
			continue
		}
		if !active {
			continue
		}
		n, err := Nodes(b, c.Total)
		if err != nil {
			errs = append(errs, err)
			allowed = 0
			continue
		}
		allowed = min(allowed, n)
	}
	if allowed == math.MaxInt {
		// No active budget limits this reason.
		allowed = c.Total
	}
	allowed -= c.Deleting + c.NotReady
	if err := errors.Join(errs...); err != nil {
		return max(allowed, 0), fmt.Errorf("nodepool %s: %w", np.Name, err)
	}
	return max(allowed, 0), nil
}
