package scheduling

import "slices"

// smallSet is the size up to which a linear scan of the sorted values beats hashing.
const smallSet = 8

// valueSet is an immutable set of label values, kept sorted (iteration without map iterators,
// deterministic output) and, past smallSet values, indexed for lookups.
type valueSet struct {
	sorted []string
	index  map[string]struct{}
}

// newValueSet copies, sorts and deduplicates values.
func newValueSet(values []string) valueSet {
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	return fromSorted(slices.Compact(sorted))
}

// fromSorted takes ownership of a sorted, duplicate-free slice.
func fromSorted(sorted []string) valueSet {
	s := valueSet{sorted: sorted}
	if len(sorted) > smallSet {
		s.index = make(map[string]struct{}, len(sorted))
		for _, v := range sorted {
			s.index[v] = struct{}{}
		}
	}
	return s
}

func (s valueSet) len() int { return len(s.sorted) }

func (s valueSet) has(v string) bool {
	if s.index != nil {
		_, ok := s.index[v]
		return ok
	}
	for _, w := range s.sorted {
		if w == v {
			return true
		}
	}
	return false
}

// filter returns the values for which keep allows them.
func (s valueSet) filter(keep *Requirement) valueSet {
	out := make([]string, 0, len(s.sorted))
	for _, v := range s.sorted {
		if keep.Has(v) {
			out = append(out, v)
		}
	}
	return fromSorted(out)
}

// union returns the values of a and b that keep (a bounded complement) still excludes.
func union(a, b valueSet, keep *Requirement) valueSet {
	out := make([]string, 0, len(a.sorted)+len(b.sorted))
	i, j := 0, 0
	for i < len(a.sorted) || j < len(b.sorted) {
		var v string
		switch {
		case j == len(b.sorted) || i < len(a.sorted) && a.sorted[i] < b.sorted[j]:
			v, i = a.sorted[i], i+1
		case i == len(a.sorted) || b.sorted[j] < a.sorted[i]:
			v, j = b.sorted[j], j+1
		default: // equal
			v, i, j = a.sorted[i], i+1, j+1
		}
		if keep.excludes(v) {
			out = append(out, v)
		}
	}
	return fromSorted(out)
}
