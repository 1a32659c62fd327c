package budget

import (
	"fmt"
	"time"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// Problem is a budget of a NodePool that cannot work as written.
type Problem struct {
	// Index is the budget's position in spec.disruption.budgets.
	Index int
	// Message says what is wrong, naming the budget.
	Message string
}

func (p Problem) String() string { return p.Message }

// Validate returns the budgets of np that cannot work as written: a node count that does not
// parse, a schedule that does not parse, has no duration, or never fires (such as "0 0 30 2 *")
// within the five years Next searches from now. The schema refuses most of these; what it
// lets through would otherwise only show as a NodePool that never disrupts.
func Validate(np *karpv1.NodePool, now time.Time) []Problem {
	var out []Problem
	for i, b := range np.Spec.Disruption.Budgets {
		name := fmt.Sprintf("budget %d", i)
		add := func(format string, args ...any) {
			out = append(out, Problem{Index: i, Message: name + " " + fmt.Sprintf(format, args...)})
		}
		if _, err := Nodes(b, 0); err != nil {
			add("has invalid nodes: %v", err)
		}
		if b.Schedule == nil {
			continue
		}
		if b.Duration == nil {
			add("has a schedule but no duration")
		}
		s, err := ParseSchedule(*b.Schedule)
		if err != nil {
			add("has a schedule that does not parse: %v", err)
			continue
		}
		if s.Next(now).IsZero() {
			add("schedule %q never fires", *b.Schedule)
		}
	}
	return out
}
