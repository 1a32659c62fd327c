package solver

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/scheduling"
)

// openKeys are the label keys an attempt's Filters look at on a node.
type openKeys struct {
	// decide are topology keys (the attempt's spread, pod (anti-)affinity and volume keys,
	// other pods' required anti-affinity keys, and keys its requirements constrain that some
	// pod counts domains by): the node carries the one value its NodeClaim is narrowed to.
	decide []string
	// choose are the other keys its requirements constrain: the node carries one allowed
	// value (claim.chosen) and the NodeClaim keeps every value the requirements allow.
	choose []string
}

// key identifies the split, for memos.
func (o openKeys) key() string {
	return strings.Join(o.decide, ",") + "|" + strings.Join(o.choose, ",")
}

// openKeys splits the label keys the attempt's Filters look at (see openKeys). The hostname
// is always decided: it is the node's name.
func (r *run) openKeys(a attempt) openKeys {
	decide := slices.Clone(a.topologyKeys)
	var choose []string
	for key, q := range a.reqs {
		if q.AllowsAbsent() {
			continue
		}
		if r.isTopologyKey(key) {
			decide = append(decide, key)
		} else {
			choose = append(choose, key)
		}
	}
	for key := range r.antiAffinityKeys {
		decide = append(decide, key)
	}
	return openKeys{decide: sortedKeys(decide), choose: sortedKeys(choose)}
}

// sortedKeys sorts and deduplicates keys, leaving out the hostname.
func sortedKeys(keys []string) []string {
	slices.Sort(keys)
	keys = slices.Compact(keys)
	return slices.DeleteFunc(keys, func(k string) bool { return k == corev1.LabelHostname })
}

// keepsAll reports whether merged, the claim's requirements before with the attempt's
// requirements added, still allows every value before allows on each key the attempt
// constrains. It answers false when it cannot tell (a complement that changed).
func keepsAll(before, merged, attemptReqs scheduling.Requirements) bool {
	for key := range attemptReqs {
		was, now := before[key], merged[key]
		if was == now {
			continue
		}
		if was == nil {
			return false
		}
		if _, ok := finite(was); !ok || now.Len() != was.Len() {
			return false
		}
	}
	return true
}

// decided reports whether reqs holds a node to exactly one value of key.
func decided(reqs scheduling.Requirements, key string) bool {
	q, ok := reqs[key]
	return ok && !q.AllowsAbsent() && q.Len() == 1
}

// needsLabels reports whether the claim's node must change before the Filters can judge the
// attempt: a label merged decides or allows differs from the node's, a topology key the
// attempt looks at is not decided, or a key its requirements constrain has no value.
func (r *run) needsLabels(c *claim, cand candidate) bool {
	merged, open := cand.merged, cand.open
	current := c.currentLabels()
	desired := current
	if cand.narrowed && !sameRequirements(merged, c.reqs) {
		desired = nodeLabels(merged, c.chosen)
		if len(desired) != len(current) {
			return true
		}
		for k, v := range desired {
			if current[k] != v {
				return true
			}
		}
	}
	for _, k := range open.decide {
		if !decided(merged, k) {
			return true
		}
	}
	for _, k := range open.choose {
		if _, ok := desired[k]; !ok {
			return true
		}
	}
	return false
}

// tryRelabel narrows the claim's open labels to each candidate value in turn and keeps the
// first the Filters accept.
func (r *run) tryRelabel(ctx context.Context, pod *corev1.Pod, a attempt, cand candidate, req vec) (bool, error) {
	c := cand.c
	requests := c.requests.plus(req)
	for _, reqs := range r.combinations(cand.merged, cand.its, cand.open.decide) {
		its := cand.its.Compatible(reqs)
		if !r.alloc.anyFits(its, requests) || !r.minValuesOK(c.pool, reqs, its) {
			continue
		}
		chosen := chooseValues(reqs, its, cand.open.choose, c.chosen)
		r.engine.Fork()
		if _, err := r.engine.Snapshot().ReplaceHypotheticalNode(c.node(reqs, chosen)); err != nil {
			return false, err
		}
		if r.engine.CheckPredicates(ctx, a.pod, c.name).IsSuccess() {
			if err := r.engine.Commit(); err != nil {
				return false, err
			}
			cand.its = its
			return true, r.commit(ctx, pod, req, cand, reqs, chosen)
		}
		if err := r.engine.Revert(); err != nil {
			return false, err
		}
	}
	return false, nil
}

// maxCombinations bounds the label combinations tried for one claim.
const maxCombinations = 32

// combinations returns reqs with each key of decide that reqs leaves multi-valued narrowed
// to one value, in every combination (up to maxCombinations), values in sorted order.
func (r *run) combinations(reqs scheduling.Requirements, its cloudprovider.InstanceTypes, decide []string) []scheduling.Requirements {
	combos := []scheduling.Requirements{reqs}
	for _, key := range decide {
		if _, decided := reqs.Labels()[key]; decided {
			continue
		}
		var next []scheduling.Requirements
		for _, base := range combos {
			for _, v := range candidateValues(base, its, key) {
				narrowed := base.Clone()
				narrowed.Add(scheduling.NewRequirement(key, corev1.NodeSelectorOpIn, v))
				next = append(next, narrowed)
				if len(next) == maxCombinations {
					break
				}
			}
		}
		combos = next
	}
	return combos
}

// chooseValues picks the node's value for each key of keys that reqs leaves with several
// values, and keeps every value prior chose that reqs still leaves open and allows (an
// earlier pod's node affinity may need it); a new value is the first candidate value. Keys
// reqs decides need none. It returns nil when nothing is chosen.
func chooseValues(reqs scheduling.Requirements, its cloudprovider.InstanceTypes, keys []string, prior map[string]string) map[string]string {
	var chosen map[string]string
	set := func(key, value string) {
		if chosen == nil {
			chosen = map[string]string{}
		}
		chosen[key] = value
	}
	for key, v := range prior {
		if q, ok := reqs[key]; ok && !q.AllowsAbsent() && q.Len() > 1 && q.Has(v) {
			set(key, v)
		}
	}
	for _, key := range keys {
		q, ok := reqs[key]
		if !ok || q.AllowsAbsent() || q.Len() == 1 || chosen[key] != "" {
			continue
		}
		if values := candidateValues(reqs, its, key); len(values) > 0 {
			set(key, values[0])
		} // else no node can carry the key; the Filters will say so
	}
	return chosen
}

// candidateValues are the values key may take on a node meeting reqs: the values reqs lists,
// or for a well-known key those the instance types offer, or one chosen value for a custom
// key that only has to exist.
func candidateValues(reqs scheduling.Requirements, its cloudprovider.InstanceTypes, key string) []string {
	req := reqs.Get(key)
	if values, ok := finite(req); ok {
		return values
	}
	if isWellKnown(key) {
		seen := map[string]bool{}
		var out []string
		for _, it := range its {
			values, _ := finite(it.Requirements.Get(key))
			for _, v := range values {
				if !seen[v] && req.Has(v) {
					seen[v] = true
					out = append(out, v)
				}
			}
		}
		slices.Sort(out)
		return out
	}
	if v := req.Any(); v != "" {
		return []string{v}
	}
	return nil
}

// sameRequirements reports whether a and b hold the same requirement objects (requirements
// are immutable, so an unchanged key keeps its pointer).
func sameRequirements(a, b scheduling.Requirements) bool {
	if len(a) != len(b) {
		return false
	}
	for k, q := range a {
		if b[k] != q {
			return false
		}
	}
	return true
}
