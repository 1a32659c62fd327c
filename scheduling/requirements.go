package scheduling

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Requirements is a set of requirements keyed by label key; a node meets it when it meets every
// requirement. A NodePool's requirements, a pod's, and a hypothetical node's (the intersection of
// both and of what its instance types offer) are all Requirements.
type Requirements map[string]*Requirement

// NewRequirements returns a set holding reqs, intersecting requirements on the same key.
func NewRequirements(reqs ...*Requirement) Requirements {
	r := make(Requirements, len(reqs))
	r.Add(reqs...)
	return r
}

// Add intersects each requirement into the set: a new key is added, a known key narrowed.
func (r Requirements) Add(reqs ...*Requirement) {
	for _, req := range reqs {
		if existing, ok := r[req.Key]; ok {
			req = existing.Intersection(req)
		}
		r[req.Key] = req
	}
}

// Clone returns a copy of the set that can be narrowed without touching r (requirements are
// immutable, so they are shared).
func (r Requirements) Clone() Requirements {
	out := make(Requirements, len(r))
	for k, v := range r {
		out[k] = v
	}
	return out
}

// Get returns the requirement on key, or an unconstrained one when r says nothing about key.
func (r Requirements) Get(key string) *Requirement {
	if req, ok := r[key]; ok {
		return req
	}
	return unconstrained(key)
}

// Has reports whether r constrains key.
func (r Requirements) Has(key string) bool {
	_, ok := r[key]
	return ok
}

// Keys returns the constrained keys, sorted.
func (r Requirements) Keys() []string {
	return sortedKeys(r)
}

// Intersects returns nil when some node can meet both sets, that is when, for every key both
// constrain, the intersection still allows a value or the label's absence. Keys that only one side
// constrains cannot conflict.
func (r Requirements) Intersects(other Requirements) error {
	small, large := r, other
	if len(small) > len(large) {
		small, large = large, small
	}
	for key, req := range small {
		if existing, ok := large[key]; ok && !req.intersects(existing) {
			return r.conflicts(other, nil, false)
		}
	}
	return nil
}

// Compatible returns nil when a node described by r (a NodePool's or NodeClaim's requirements)
// can meet incoming (typically a pod's). It is Intersects plus Karpenter's rule for keys that
// only incoming constrains:
//
//   - a key in allowUndefined (pass WellKnownLabels) is decided by instance types and offerings
//     later; r leaving it open means any value the cloud provider has, so it only needs a
//     satisfiable requirement here;
//   - any other (custom, user-defined) key is a label the NodePool would not put on its nodes, so
//     incoming may only ask for its absence (NotIn, DoesNotExist). A custom label becomes
//     schedulable once the NodePool declares it, e.g. with the Exists operator, or sets it in its
//     template labels.
//
// Pass a nil allowUndefined to hold incoming to exactly what r defines, as for an existing node's
// labels.
func (r Requirements) Compatible(incoming Requirements, allowUndefined sets.Set[string]) error {
	for key, req := range incoming {
		if !r.compatibleKey(key, req, allowUndefined) {
			return r.conflicts(incoming, allowUndefined, true)
		}
	}
	return nil
}

func (r Requirements) compatibleKey(key string, incoming *Requirement, allowUndefined sets.Set[string]) bool {
	if existing, ok := r[key]; ok {
		return existing.intersects(incoming)
	}
	if allowUndefined.Has(key) {
		return incoming.Satisfiable()
	}
	return incoming.absentOK
}

// conflicts is the slow path of Intersects and Compatible: it lists every offending key, sorted,
// so that the message does not depend on map order.
func (r Requirements) conflicts(incoming Requirements, allowUndefined sets.Set[string], checkUndefined bool) error {
	var errs []error
	for _, key := range incoming.Keys() {
		req := incoming[key]
		existing, defined := r[key]
		switch {
		case defined && !existing.intersects(req):
			errs = append(errs, &IncompatibleError{Key: key, Required: req, Allowed: existing})
		case !defined && checkUndefined && !r.compatibleKey(key, req, allowUndefined):
			errs = append(errs, &IncompatibleError{Key: key, Required: req, WellKnown: allowUndefined.Has(key)})
		}
	}
	return errors.Join(errs...)
}

// IncompatibleError says why one key rules out every node: the two sides' requirements do not
// intersect, or Allowed is nil because the key is undefined on the allowing side.
type IncompatibleError struct {
	Key      string
	Required *Requirement
	Allowed  *Requirement
	// WellKnown tells, for an undefined key, that the key was allowed to be undefined, so the
	// required side itself is unsatisfiable.
	WellKnown bool
}

func (e *IncompatibleError) Error() string {
	switch {
	case e.Allowed != nil:
		return fmt.Sprintf("key %s: requires %s, but only %s is allowed", e.Key, e.Required.describe(), e.Allowed.describe())
	case e.WellKnown:
		return fmt.Sprintf("key %s: requires %s, which no value satisfies", e.Key, e.Required.describe())
	default:
		return fmt.Sprintf("key %s: requires %s, but the label is undefined and not well-known (declare it in the NodePool's requirements, e.g. with Exists, or in its labels)", e.Key, e.Required.describe())
	}
}

// Labels returns the labels a node meeting r must carry: one per key that allows exactly one
// value and requires the label. Keys with several candidate values are left for the engine to
// decide on the concrete node.
func (r Requirements) Labels() map[string]string {
	labels := make(map[string]string)
	for key, req := range r {
		if !req.absentOK && req.Len() == 1 {
			labels[key] = req.Any()
		}
	}
	return labels
}

// ValidateMinValues returns an error naming each key that allows fewer values than its
// MinValues (for example instance-family In [m5 c5] with minValues 3, or after a pod narrowed it).
func (r Requirements) ValidateMinValues() error {
	var errs []error
	for _, key := range r.Keys() {
		req := r[key]
		if req.MinValues != nil && req.Len() < *req.MinValues {
			errs = append(errs, fmt.Errorf("key %s: minValues %d, but %s allows %d", key, *req.MinValues, req.describe(), req.Len()))
		}
	}
	return errors.Join(errs...)
}

// NodeSelectorRequirements returns the exact expressions of every requirement, sorted by key.
func (r Requirements) NodeSelectorRequirements() []corev1.NodeSelectorRequirement {
	var out []corev1.NodeSelectorRequirement
	for _, key := range r.Keys() {
		out = append(out, r[key].NodeSelectorRequirements()...)
	}
	return out
}

// String lists the requirements sorted by key, for logs and messages.
func (r Requirements) String() string {
	parts := make([]string, 0, len(r))
	for _, key := range r.Keys() {
		parts = append(parts, r[key].String())
	}
	return strings.Join(parts, ", ")
}
