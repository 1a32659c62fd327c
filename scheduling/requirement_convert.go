package scheduling

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// maxPrintedValues keeps messages about long value lists (hundreds of instance types) readable.
const maxPrintedValues = 10

// Operator returns the operator that best names r: In, NotIn, Exists, DoesNotExist, or for
// integer bounds Gt/Gte (lower bound) or Lt/Lte (upper bound only). One operator cannot say
// everything an intersection can ("Exists and NotIn [a]" is reported as NotIn, "Gt 3 and Lt 7"
// as Gt); NodeSelectorRequirements gives the exact form. A requirement that nothing satisfies is
// In with no values, and one that everything satisfies (Get on an absent key) is Exists.
func (r *Requirement) Operator() corev1.NodeSelectorOperator {
	switch {
	case !r.complement && r.values.len() == 0 && r.absentOK:
		return corev1.NodeSelectorOpDoesNotExist
	case !r.complement:
		return corev1.NodeSelectorOpIn
	case r.hasLower:
		return r.lowerOperator()
	case r.hasUpper:
		return r.upperOperator()
	case r.values.len() > 0:
		return corev1.NodeSelectorOpNotIn
	default:
		return corev1.NodeSelectorOpExists
	}
}

func (r *Requirement) lowerOperator() corev1.NodeSelectorOperator {
	if r.lowerFromGt {
		return corev1.NodeSelectorOpGt
	}
	return NodeSelectorOpGte
}

func (r *Requirement) upperOperator() corev1.NodeSelectorOperator {
	if r.upperFromLt {
		return corev1.NodeSelectorOpLt
	}
	return NodeSelectorOpLte
}

// NodeSelectorRequirements returns node selector expressions that, ANDed, match exactly the nodes
// that meet r: usually one, several when an intersection combines bounds and exclusions (for
// example Gt 3, Lt 7 and NotIn [5]), none when r is unconstrained. Bounds keep the operator they
// were written with, so Gte and Lte appear only where the input had them; those two are
// Karpenter's and belong in NodePool and NodeClaim requirements, not in a pod's node affinity.
func (r *Requirement) NodeSelectorRequirements() []corev1.NodeSelectorRequirement {
	expr := func(op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: r.Key, Operator: op, Values: values}
	}
	switch {
	case !r.complement && r.values.len() == 0 && r.absentOK:
		return []corev1.NodeSelectorRequirement{expr(corev1.NodeSelectorOpDoesNotExist)}
	case !r.complement:
		return []corev1.NodeSelectorRequirement{expr(corev1.NodeSelectorOpIn, r.Values()...)}
	case r.absentOK && r.values.len() == 0:
		return nil
	case r.absentOK:
		return []corev1.NodeSelectorRequirement{expr(corev1.NodeSelectorOpNotIn, r.Values()...)}
	}
	var out []corev1.NodeSelectorRequirement
	if r.hasLower {
		n := r.lower
		if r.lowerFromGt {
			n--
		}
		out = append(out, expr(r.lowerOperator(), strconv.FormatInt(n, 10)))
	}
	if r.hasUpper {
		n := r.upper
		if r.upperFromLt {
			n++
		}
		out = append(out, expr(r.upperOperator(), strconv.FormatInt(n, 10)))
	}
	if !r.bounded() {
		out = append(out, expr(corev1.NodeSelectorOpExists))
	}
	if r.values.len() > 0 {
		out = append(out, expr(corev1.NodeSelectorOpNotIn, r.Values()...))
	}
	return out
}

// String describes r with its key, for example "topology.kubernetes.io/zone In [us-west-2a]".
func (r *Requirement) String() string {
	return r.Key + " " + r.describe()
}

// describe is String without the key: the exact expressions joined with "and", value lists
// shortened past maxPrintedValues.
func (r *Requirement) describe() string {
	exprs := r.NodeSelectorRequirements()
	if len(exprs) == 0 {
		return "unconstrained"
	}
	parts := make([]string, 0, len(exprs))
	for _, e := range exprs {
		switch e.Operator {
		case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
			parts = append(parts, string(e.Operator))
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			parts = append(parts, fmt.Sprintf("%s [%s]", e.Operator, joinValues(e.Values)))
		default:
			parts = append(parts, fmt.Sprintf("%s %s", e.Operator, e.Values[0]))
		}
	}
	return strings.Join(parts, " and ")
}

func joinValues(values []string) string {
	if len(values) <= maxPrintedValues {
		return strings.Join(values, " ")
	}
	return fmt.Sprintf("%s ... and %d more", strings.Join(values[:maxPrintedValues], " "), len(values)-maxPrintedValues)
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
