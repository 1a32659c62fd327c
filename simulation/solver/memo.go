package solver

import "github.com/joinery-dev/joinery/simulation"

// memo is what pods of one equivalence class learn for one attempt and share with their
// siblings. Per-claim marks are slices indexed by claim index: tryClaims reads them for
// every claim it visits.
type memo struct {
	// failed[i]: claim i cannot take the attempt, now or later.
	failed []bool
	// noNew, when set, is why no new NodeClaim can take a monotone attempt.
	noNew []simulation.NodePoolReason
	pools map[*pool]*poolFit
	// shapes are the new-node shapes per NodePool and open keys (see newShapes).
	shapes map[*pool]map[string][]newShape
	// spread marks the claims PodTopologySpread's numbers rejected for a non-monotone
	// attempt; a mark holds while the engine's SpreadEpoch and the claim's labels do (epoch
	// 0: no mark).
	spread []spreadMark
	// forGood marks the claims a non-monotone attempt was rejected from for good (resources,
	// host ports, required anti-affinity: simulation.RejectedForGood) with their labels'
	// version plus one (0: no mark); the rejection holds while that does.
	forGood []int
	// affinity is the attempt's required pod affinity rule, whose rejections classes share;
	// set on the attempt's first tryClaims.
	affinity      *affinityRule
	affinityKnown bool
}

type spreadMark struct {
	epoch         uint64
	labelsVersion int
}

// spreadRejects reports whether claim c is still rejected by the spread of an attempt whose
// current epoch is epoch.
func (m *memo) spreadRejects(c *claim, epoch uint64) bool {
	if epoch == 0 || c.index >= len(m.spread) {
		return false
	}
	mark := m.spread[c.index]
	return mark.epoch == epoch && mark.labelsVersion == c.labelsVersion
}

func (m *memo) markSpread(c *claim, epoch uint64) {
	m.spread = grown(m.spread, c.index)
	m.spread[c.index] = spreadMark{epoch: epoch, labelsVersion: c.labelsVersion}
}

func (m *memo) hasFailed(i int) bool { return i < len(m.failed) && m.failed[i] }

// rejectsForGood reports whether claim c is still rejected for good (see forGood).
func (m *memo) rejectsForGood(c *claim) bool {
	return c.index < len(m.forGood) && m.forGood[c.index] == c.labelsVersion+1
}

func (m *memo) markForGood(c *claim) {
	m.forGood = grown(m.forGood, c.index)
	m.forGood[c.index] = c.labelsVersion + 1
}

func (m *memo) fail(i int) {
	m.failed = grown(m.failed, i)
	m.failed[i] = true
}

// grown returns s with index i in range, zero values added.
func grown[T any](s []T, i int) []T {
	if i < len(s) {
		return s
	}
	return append(s, make([]T, i+1-len(s))...)
}

func (r *run) memo(key string) *memo {
	m, ok := r.memos[key]
	if !ok {
		m = &memo{pools: map[*pool]*poolFit{}, shapes: map[*pool]map[string][]newShape{}}
		r.memos[key] = m
	}
	return m
}
