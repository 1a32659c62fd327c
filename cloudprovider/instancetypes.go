package cloudprovider

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/joinery-dev/joinery/scheduling"
)

// InstanceTypes is a list of instance types; its methods return new lists and never reorder
// the receiver.
type InstanceTypes []*InstanceType

// Compatible returns the types a node meeting reqs can be (see InstanceType.CompatibleWith).
func (its InstanceTypes) Compatible(reqs scheduling.Requirements) InstanceTypes {
	var out InstanceTypes
	for _, it := range its {
		if it.CompatibleWith(reqs) {
			out = append(out, it)
		}
	}
	return out
}

// OrderByPrice returns the types sorted by the price of their cheapest available offering
// compatible with reqs, cheapest first; types without such an offering come last, and equal
// prices sort by name so the order is deterministic.
func (its InstanceTypes) OrderByPrice(reqs scheduling.Requirements) InstanceTypes {
	type priced struct {
		it    *InstanceType
		price float64
	}
	sorted := make([]priced, len(its))
	for i, it := range its {
		sorted[i] = priced{it: it, price: it.CheapestPrice(reqs)}
	}
	slices.SortStableFunc(sorted, func(a, b priced) int {
		return cmp.Or(cmp.Compare(a.price, b.price), cmp.Compare(a.it.Name, b.it.Name))
	})
	out := make(InstanceTypes, len(sorted))
	for i, p := range sorted {
		out[i] = p.it
	}
	return out
}

// Truncate keeps the first maxItems types (callers order them by price first) and, when reqs has
// keys with minValues that those do not cover, adds later types, in order, that bring a value
// still missing, until every minValues is met. It returns an error naming the keys whose
// minValues the whole list cannot meet, with the longest list it built.
func (its InstanceTypes) Truncate(reqs scheduling.Requirements, maxItems int) (InstanceTypes, error) {
	keep := its[:max(0, min(maxItems, len(its)))]
	out := slices.Clone(keep)
	seen := distinctValues(out, reqs)
	for _, it := range its[len(keep):] {
		short := shortKeys(reqs, seen)
		if len(short) == 0 {
			break
		}
		if addsMissingValue(it, reqs, short, seen) {
			out = append(out, it)
			for key, values := range valuesOf(it, reqs) {
				seen[key] = seen[key].Union(values)
			}
		}
	}
	if short := shortKeys(reqs, seen); len(short) > 0 {
		return out, fmt.Errorf("minValues not met: %s", describeShortfall(reqs, seen, short))
	}
	return out, nil
}

// CheaperThan returns the types (order kept) that a node meeting reqs can be launched as for
// less than price whichever offering the launch picks: the type is compatible with reqs (some
// available offering), and every offering compatible with reqs costs less than price,
// unavailable ones included, since availability changes between a decision and its launch.
// Consolidation narrows a replacement to these, so that no fallback (on-demand when spot runs
// out, another zone) can cost more than the nodes it replaces.
func (its InstanceTypes) CheaperThan(reqs scheduling.Requirements, price float64) InstanceTypes {
	var out InstanceTypes
	for _, it := range its {
		if !it.CompatibleWith(reqs) {
			continue
		}
		if dearest := it.Offerings.Compatible(reqs).MostExpensive(); dearest != nil && dearest.Price < price {
			out = append(out, it)
		}
	}
	return out
}

// MinValuesShortfall returns nil when the types together cover every minValues of reqs, or an
// error naming each key that falls short.
func (its InstanceTypes) MinValuesShortfall(reqs scheduling.Requirements) error {
	seen := distinctValues(its, reqs)
	if short := shortKeys(reqs, seen); len(short) > 0 {
		return fmt.Errorf("minValues not met: %s", describeShortfall(reqs, seen, short))
	}
	return nil
}

// minValuesKeys are the keys of reqs that carry minValues, sorted.
func minValuesKeys(reqs scheduling.Requirements) []string {
	var keys []string
	for _, key := range reqs.Keys() {
		if reqs[key].MinValues != nil {
			keys = append(keys, key)
		}
	}
	return keys
}

// valuesOf returns, for each minValues key of reqs, the values the type offers that reqs allows.
func valuesOf(it *InstanceType, reqs scheduling.Requirements) map[string]sets.Set[string] {
	out := map[string]sets.Set[string]{}
	for _, key := range minValuesKeys(reqs) {
		req, ok := it.Requirements[key]
		if !ok || req.Operator() != corev1.NodeSelectorOpIn {
			continue
		}
		values := sets.New[string]()
		for _, v := range req.Values() {
			if reqs[key].Has(v) {
				values.Insert(v)
			}
		}
		out[key] = values
	}
	return out
}

func distinctValues(its InstanceTypes, reqs scheduling.Requirements) map[string]sets.Set[string] {
	seen := map[string]sets.Set[string]{}
	for _, key := range minValuesKeys(reqs) {
		seen[key] = sets.New[string]()
	}
	for _, it := range its {
		for key, values := range valuesOf(it, reqs) {
			seen[key] = seen[key].Union(values)
		}
	}
	return seen
}

func shortKeys(reqs scheduling.Requirements, seen map[string]sets.Set[string]) []string {
	var short []string
	for _, key := range minValuesKeys(reqs) {
		if seen[key].Len() < *reqs[key].MinValues {
			short = append(short, key)
		}
	}
	return short
}

func addsMissingValue(it *InstanceType, reqs scheduling.Requirements, short []string, seen map[string]sets.Set[string]) bool {
	values := valuesOf(it, reqs)
	for _, key := range short {
		if values[key].Difference(seen[key]).Len() > 0 {
			return true
		}
	}
	return false
}

func describeShortfall(reqs scheduling.Requirements, seen map[string]sets.Set[string], short []string) string {
	parts := make([]string, len(short))
	for i, key := range short {
		parts[i] = fmt.Sprintf("key %s needs %d distinct values, the instance types offer %d", key, *reqs[key].MinValues, seen[key].Len())
	}
	return strings.Join(parts, "; ")
}
