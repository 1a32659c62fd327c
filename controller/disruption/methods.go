package disruption

import (
	"context"
	"fmt"
)

// Method is one automated disruption method of the loop. It states its whole contract — what
// the loop needs to know to budget, validate, report and count its commands — as methods, as
// Karpenter's disruption methods do; the loop uses nothing else of it (no capability is found
// by a type assertion). The loop asks each method in order for a command.
type Method interface {
	// Name names the method in logs, events, metrics and command IDs (drift, emptiness, ...).
	Name() string
	// Reason is the disruption reason the method's budgets are counted under.
	Reason() string
	// Class is the method's disruption class (Karpenter's): which pod-level controls its
	// candidates are held by.
	Class() Class
	// ConsolidationType is the consolidation_type label of its metrics and events (empty,
	// multi, single); "" for a method that does not consolidate (drift).
	ConsolidationType() string
	// Validation says which of the loop's delays its commands wait before they are
	// validated.
	Validation() Validation
	// ShouldDisrupt reports whether a candidate is one this method acts on.
	ShouldDisrupt(c *Candidate) bool
	// ComputeCommand picks, from the method's candidates in priority order, a command that
	// the budgets allow (allowed: remaining disruptions per NodePool for Reason) and the
	// simulation accepts; nil when there is none. Candidates passed over are returned with
	// why, for DisruptionBlocked events.
	ComputeCommand(ctx context.Context, c *Cluster, allowed map[string]int, cands []*Candidate) (*Command, []Blocked, error)
	// Revalidate recomputes old, after its validation delay, over fresh: the same candidates
	// read again from c, each already checked to be a candidate the method acts on and
	// within the budget. It returns the command to run, or a *Refusal saying why none.
	Revalidate(ctx context.Context, c *Cluster, old *Command, fresh []*Candidate) (*Command, error)
}

// Class is a method's disruption class, Karpenter's.
type Class string

const (
	// ClassGraceful methods (emptiness, consolidation) disrupt only nodes whose pods all
	// allow it: no do-not-disrupt pod, every PDB allowing an eviction.
	ClassGraceful Class = "graceful"
	// ClassEventual methods (drift) disrupt a node whose NodeClaim has a
	// terminationGracePeriod despite such pods: its drain ends at that period regardless.
	ClassEventual Class = "eventual"
)

// Validation names the delay a method's commands wait before they are validated.
type Validation int

const (
	// ValidateAfterDelay waits Options.ValidationDelay (drift).
	ValidateAfterDelay Validation = iota
	// ValidateAfterConsolidationDelay waits Options.ConsolidationValidationDelay (Karpenter's
	// 15 s for the consolidation methods).
	ValidateAfterConsolidationDelay
)

// reportsUnconsolidatable reports whether the nodes m's candidates are blocked from also get
// Unconsolidatable events: those of the consolidation of underused nodes (Karpenter's).
func reportsUnconsolidatable(m Method) bool {
	t := m.ConsolidationType()
	return t == ConsolidationTypeMulti || t == ConsolidationTypeSingle
}

// GracefulMethods are the loop's methods in the order it runs them: drift, emptiness, multi-
// then single-node consolidation, over consolidation's simulator.
func GracefulMethods(consolidation Consolidation) []Method {
	if consolidation.looks == nil {
		consolidation.looks = &preferenceLooks{} // shared by both consolidation methods
	}
	return []Method{
		&Drift{Simulator: consolidation.Simulator, InstanceTypes: consolidation.InstanceTypes},
		&Emptiness{},
		&MultiNodeConsolidation{Consolidation: consolidation},
		&SingleNodeConsolidation{Consolidation: consolidation},
	}
}

func budgetBlocked(cand *Candidate, reason string) Blocked {
	return Blocked{NodeClaim: cand.NodeClaim, Node: cand.Node, Message: fmt.Sprintf(
		"Cannot disrupt Node: no allowed disruptions for reason %s in nodepool %s (disruption budget)", reason, cand.NodePool.Name)}
}
