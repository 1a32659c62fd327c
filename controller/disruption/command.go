package disruption

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/controller/cost"
)

// The state of a command lives on the cluster's objects, so a restarted controller finds it:
// candidates carry CommandAnnotationKey (and the karpenter.sh/disrupted taint on their Node),
// replacements carry ReplacementForAnnotationKey with the same command ID. joinery's own
// domain: Karpenter keeps this state in memory.
const (
	// CommandAnnotationKey is the command ID on a candidate NodeClaim.
	CommandAnnotationKey = "joinery.dev/disruption-command"
	// StartedAnnotationKey is when the command started (RFC 3339), on a candidate; the
	// replacement timeout counts from it.
	StartedAnnotationKey = "joinery.dev/disruption-started"
	// ReplacementsAnnotationKey is the number of replacements the command creates, on a
	// candidate: a restart that finds fewer knows the command was cut short.
	ReplacementsAnnotationKey = "joinery.dev/disruption-replacements"
	// ReplacementForAnnotationKey is the command ID on a replacement NodeClaim. The scheduler's
	// Provisioner sees a replacement as any NodeClaim in flight: its planned pods
	// (joinery.dev/planned-pods) wait for it rather than cause more capacity.
	ReplacementForAnnotationKey = "joinery.dev/disruption-replacement-for"
)

// isMarked reports whether a command has chosen nc.
func isMarked(nc *karpv1.NodeClaim) bool {
	return nc.Annotations[CommandAnnotationKey] != ""
}

// Decision is what a command does, Karpenter's metric label values.
type Decision string

const (
	DecisionDelete  Decision = "delete"
	DecisionReplace Decision = "replace"
)

// Command is one disruption decision: candidates to remove, replacements to launch first.
type Command struct {
	// ID names the command on the cluster's objects.
	ID string
	// Method names the method that made it (drift, emptiness, ...).
	Method string
	// Reason is the disruption reason, a budget reason (Drifted, Empty, Underutilized).
	Reason     string
	Candidates []*Candidate
	// Replacements are unsaved NodeClaims to launch and wait for before the candidates go.
	Replacements []*karpv1.NodeClaim
	// Destinations maps each moved pod to where the simulation put it: an existing node's
	// NodeClaim (or node name), a launching NodeClaim, or "replacement-N".
	Destinations map[types.UID]string
	// Scores are the move's Balanced scores, one per Balanced NodePool it removes nodes from.
	Scores []MoveScore
	// prices is the price book consolidation decided the command with: its savings are
	// priced from the same listing (Controller.pricer), nil for a method that prices nothing.
	prices *cost.Pricer
	// raises are what the replacements of commands chosen earlier in the pass must hold once
	// this command's pods are on them too (Simulation.Raised).
	raises []raise
	// narrowed are, by replacement, how each was narrowed to its cheapest spot types (nil for
	// one that was not).
	narrowed []*narrowing
}

// raise is what a replacement chosen earlier in the pass must hold once a later command's
// pods land on it, and the instance types it then launches as (nil: those it has).
type raise struct {
	replacement   *karpv1.NodeClaim // the earlier command's, as it launches
	requests      corev1.ResourceList
	instanceTypes []string
}

// Decision says whether the command deletes or replaces.
func (c *Command) Decision() Decision {
	if len(c.Replacements) > 0 {
		return DecisionReplace
	}
	return DecisionDelete
}

// PodCount is the number of pods the command moves.
func (c *Command) PodCount() int {
	n := 0
	for _, cand := range c.Candidates {
		n += len(cand.Pods)
	}
	return n
}

// CandidateNames lists the candidates' NodeClaims.
func (c *Command) CandidateNames() []string {
	out := make([]string, len(c.Candidates))
	for i, cand := range c.Candidates {
		out[i] = cand.Name()
	}
	return out
}

// String summarises the command for logs and events.
func (c *Command) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%s %s %s", c.Method, c.Reason, c.Decision(), strings.Join(c.CandidateNames(), ","))
	if len(c.Replacements) > 0 {
		fmt.Fprintf(&b, " with %d replacement(s)", len(c.Replacements))
	}
	return b.String()
}

// disruptedTaint is put on candidates' Nodes so nothing new schedules there.
var disruptedTaint = corev1.Taint{Key: karpv1.DisruptedTaintKey, Effect: corev1.TaintEffectNoSchedule}

func hasDisruptedTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == disruptedTaint.Key && t.Effect == disruptedTaint.Effect {
			return true
		}
	}
	return false
}
