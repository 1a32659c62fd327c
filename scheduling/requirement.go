package scheduling

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// Karpenter's inclusive integer operators, beyond corev1's six. The strings match
// apis/karpenter/v1's NodeSelectorOpGte and NodeSelectorOpLte; the algebra keeps its own copy so
// that it depends on corev1 alone.
const (
	NodeSelectorOpGte corev1.NodeSelectorOperator = "Gte"
	NodeSelectorOpLte corev1.NodeSelectorOperator = "Lte"
)

// Requirement is what one label key may be on a node: a set of allowed values, and whether a node
// without the label qualifies. It follows Kubernetes' node affinity semantics exactly:
//
//	In [vs]        one of vs; the label must exist
//	NotIn [vs]     anything but vs, or no label at all
//	Exists         any value; the label must exist
//	DoesNotExist   no label
//	Gt, Lt n       a decimal integer label value beyond n; the label must exist
//	Gte, Lte n     Karpenter's inclusive versions of Gt and Lt
//
// Value sets are complement-aware: an In set is stored as its values, NotIn and Exists as the
// values they exclude. Integer bounds only ever sit on complement sets (an In set is filtered by
// them at construction), so "In [1 7] and Gt 3" is simply In [7].
//
// Label values are never negative integers (a label value must start with a letter or digit), so
// bounds range over 0..MaxInt64 and only digit strings parse as integers. Counting (Len, Any) uses
// canonical spellings: "05" matches Gte 5, but Len and Any do not count or invent it.
//
// A Requirement is immutable once built: Intersection returns a new one, so a Requirement may be
// shared between Requirements sets.
type Requirement struct {
	Key string
	// MinValues asks for at least this many distinct allowed values (NodePool requirements only).
	// Set it before sharing the Requirement.
	MinValues *int

	// values are the allowed values, or with complement the excluded ones.
	values     valueSet
	complement bool
	// absentOK: a node without the label satisfies the requirement (NotIn, DoesNotExist).
	absentOK bool
	// lower and upper are inclusive integer bounds, meaningful when hasLower or hasUpper is set;
	// otherwise they rest at 0 and MaxInt64. lowerFromGt and upperFromLt remember that a bound was
	// written as Gt or Lt so that it prints and converts back the way the user wrote it.
	lower, upper             int64
	hasLower, hasUpper       bool
	lowerFromGt, upperFromLt bool
}

// NewRequirement builds the requirement for one node selector expression. Input that Kubernetes
// or the NodePool schema would reject (an unknown operator; Gt, Lt, Gte or Lte without exactly
// one integer value) yields a requirement that nothing satisfies, as an unparsable expression
// matches no node in kube-scheduler. Values of Exists and DoesNotExist are ignored.
func NewRequirement(key string, operator corev1.NodeSelectorOperator, values ...string) *Requirement {
	r := &Requirement{Key: key, upper: math.MaxInt64}
	switch operator {
	case corev1.NodeSelectorOpIn:
		r.values = newValueSet(values)
	case corev1.NodeSelectorOpNotIn:
		r.values, r.complement, r.absentOK = newValueSet(values), true, true
	case corev1.NodeSelectorOpExists:
		r.complement = true
	case corev1.NodeSelectorOpDoesNotExist:
		r.absentOK = true
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, NodeSelectorOpGte, NodeSelectorOpLte:
		if len(values) != 1 {
			return unsatisfiable(key)
		}
		n, err := strconv.ParseInt(values[0], 10, 64)
		if err != nil {
			return unsatisfiable(key)
		}
		r.complement = true
		if !r.setBound(operator, n) {
			return unsatisfiable(key)
		}
	default:
		return unsatisfiable(key)
	}
	return r
}

// unsatisfiable is the requirement no node meets: no allowed value, and the label must exist.
func unsatisfiable(key string) *Requirement {
	return &Requirement{Key: key, upper: math.MaxInt64}
}

// unconstrained is the requirement every node meets, with or without the label.
func unconstrained(key string) *Requirement {
	return &Requirement{Key: key, complement: true, absentOK: true, upper: math.MaxInt64}
}

// setBound applies one integer operator to a fresh complement requirement. It reports false when
// no non-negative integer satisfies it.
func (r *Requirement) setBound(operator corev1.NodeSelectorOperator, n int64) bool {
	switch operator {
	case corev1.NodeSelectorOpGt:
		if n == math.MaxInt64 {
			return false
		}
		r.lower, r.hasLower, r.lowerFromGt = max(n+1, 0), true, true
	case NodeSelectorOpGte:
		r.lower, r.hasLower = max(n, 0), true
	case corev1.NodeSelectorOpLt:
		if n <= 0 {
			return false
		}
		r.upper, r.hasUpper, r.upperFromLt = n-1, true, true
	case NodeSelectorOpLte:
		if n < 0 {
			return false
		}
		r.upper, r.hasUpper = n, true
	}
	return true
}

func (r *Requirement) bounded() bool { return r.hasLower || r.hasUpper }

// AllowsAbsent reports whether a node without the label satisfies r (NotIn, DoesNotExist).
func (r *Requirement) AllowsAbsent() bool { return r.absentOK }

// Has reports whether a node whose label is value satisfies r.
func (r *Requirement) Has(value string) bool {
	listed := r.values.has(value)
	if !r.complement {
		return listed
	}
	if listed {
		return false
	}
	if r.bounded() {
		n, ok := parseLabelInt(value)
		return ok && n >= r.lower && n <= r.upper
	}
	return true
}

// Len is the number of allowed label values (absence is not a value): the size of an In set,
// math.MaxInt for a complement without bounds, and within integer bounds the count of integers
// that are not excluded, capped at math.MaxInt.
func (r *Requirement) Len() int {
	if !r.complement {
		return r.values.len()
	}
	if !r.bounded() {
		return math.MaxInt
	}
	span := uint64(r.upper - r.lower) // upper >= lower >= 0 on a bounded requirement
	excluded := uint64(r.excludedInRange(r.lower, r.upper, valueSet{}))
	if span < excluded {
		return 0
	}
	if span-excluded >= math.MaxInt {
		return math.MaxInt
	}
	return int(span - excluded + 1)
}

// Satisfiable reports whether any node can meet r, with some value or without the label.
func (r *Requirement) Satisfiable() bool {
	return r.absentOK || r.Len() > 0
}

// excludedInRange counts r's excluded values that are canonical integers within [lo, hi],
// skipping those also in skip (so two requirements' exclusions are counted once).
func (r *Requirement) excludedInRange(lo, hi int64, skip valueSet) int {
	count := 0
	for _, v := range r.values.sorted {
		if n, ok := parseCanonicalInt(v); ok && n >= lo && n <= hi && !skip.has(v) {
			count++
		}
	}
	return count
}

// Any returns one allowed value, or "" when none is: the smallest of a finite set (so the choice
// is deterministic), the smallest integer within bounds, or otherwise a generated value. Generated
// values are random so that two nodes never share a made-up value of, say, a custom topology key.
func (r *Requirement) Any() string {
	if !r.complement {
		if r.values.len() == 0 {
			return ""
		}
		return r.values.sorted[0]
	}
	if r.bounded() {
		for n := r.lower; n <= r.upper; n++ {
			if v := strconv.FormatInt(n, 10); r.Has(v) {
				return v
			}
			if n == math.MaxInt64 {
				break
			}
		}
		return ""
	}
	for {
		if v := strconv.FormatUint(rand.Uint64(), 36); r.Has(v) {
			return v
		}
	}
}

// Values returns r's listed values, sorted: the allowed values of an In set, or the excluded
// values of a complement (NotIn, or Exists and integer bounds with exclusions).
func (r *Requirement) Values() []string {
	return slices.Clone(r.values.sorted)
}

// Intersection returns the requirement met exactly by the nodes that meet both r and other. It
// keeps r's key and the larger MinValues, as Karpenter does for repeated keys.
func (r *Requirement) Intersection(other *Requirement) *Requirement {
	out := &Requirement{
		Key:       r.Key,
		MinValues: maxMinValues(r.MinValues, other.MinValues),
		absentOK:  r.absentOK && other.absentOK,
		upper:     math.MaxInt64,
	}
	switch {
	case r.complement && other.complement:
		out.complement = true
		out.mergeBounds(r)
		out.mergeBounds(other)
		if out.lower > out.upper {
			return unsatisfiableLike(out)
		}
		out.values = union(r.values, other.values, out)
	case r.complement:
		out.values = other.values.filter(r)
	case other.complement:
		out.values = r.values.filter(other)
	default:
		small, large := r, other
		if small.values.len() > large.values.len() {
			small, large = large, small
		}
		out.values = small.values.filter(large)
	}
	return out
}

// unsatisfiableLike keeps key and MinValues of r but allows nothing except, if r did, absence.
func unsatisfiableLike(r *Requirement) *Requirement {
	return &Requirement{Key: r.Key, MinValues: r.MinValues, absentOK: r.absentOK, upper: math.MaxInt64}
}

// excludes reports whether listing v as excluded changes what a bounded complement allows;
// exclusions outside the bounds are dropped so that Len, String and conversions stay tidy.
func (r *Requirement) excludes(v string) bool {
	if !r.bounded() {
		return true
	}
	n, ok := parseLabelInt(v)
	return ok && n >= r.lower && n <= r.upper
}

// mergeBounds tightens r's bounds by src's. On a tie the inclusive spelling wins, so that the
// result does not depend on the order of the operands.
func (r *Requirement) mergeBounds(src *Requirement) {
	if src.hasLower {
		switch {
		case !r.hasLower || src.lower > r.lower:
			r.lower, r.hasLower, r.lowerFromGt = src.lower, true, src.lowerFromGt
		case src.lower == r.lower:
			r.lowerFromGt = r.lowerFromGt && src.lowerFromGt
		}
	}
	if src.hasUpper {
		switch {
		case !r.hasUpper || src.upper < r.upper:
			r.upper, r.hasUpper, r.upperFromLt = src.upper, true, src.upperFromLt
		case src.upper == r.upper:
			r.upperFromLt = r.upperFromLt && src.upperFromLt
		}
	}
}

func maxMinValues(a, b *int) *int {
	switch {
	case a == nil:
		return b
	case b == nil || *a >= *b:
		return a
	default:
		return b
	}
}

// Intersects reports, without allocating, whether some node meets both r and other (for hot
// paths that match requirements key by key, such as NodeOverlay matching).
func (r *Requirement) Intersects(other *Requirement) bool { return r.intersects(other) }

// intersects reports, without allocating, whether some node meets both r and other.
func (r *Requirement) intersects(other *Requirement) bool {
	if r.absentOK && other.absentOK {
		return true
	}
	switch {
	case !r.complement && !other.complement:
		small, large := r, other
		if small.values.len() > large.values.len() {
			small, large = large, small
		}
		for _, v := range small.values.sorted {
			if large.values.has(v) {
				return true
			}
		}
		return false
	case !r.complement:
		return anyAllowed(r.values, other)
	case !other.complement:
		return anyAllowed(other.values, r)
	}
	if !r.bounded() && !other.bounded() {
		return true // infinitely many strings, finitely many excluded
	}
	lo, hi := max(r.lower, other.lower), min(r.upper, other.upper)
	if lo > hi {
		return false
	}
	excluded := r.excludedInRange(lo, hi, valueSet{}) + other.excludedInRange(lo, hi, r.values)
	return uint64(hi-lo) >= uint64(excluded) // hi-lo+1 integers, more than are excluded
}

func anyAllowed(values valueSet, r *Requirement) bool {
	for _, v := range values.sorted {
		if r.Has(v) {
			return true
		}
	}
	return false
}

// parseLabelInt parses a label value as a non-negative decimal integer, the way kube-scheduler
// reads a label for Gt and Lt except that signs are refused (no label value can start with one).
// Unlike strconv it does not allocate on failure, which matters in Has.
func parseLabelInt(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		d := s[i] - '0'
		if d > 9 {
			return 0, false
		}
		if n > (math.MaxInt64-int64(d))/10 {
			return 0, false
		}
		n = n*10 + int64(d)
	}
	return n, true
}

// parseCanonicalInt is parseLabelInt for the one spelling strconv.FormatInt would produce.
func parseCanonicalInt(s string) (int64, bool) {
	if len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	return parseLabelInt(s)
}
