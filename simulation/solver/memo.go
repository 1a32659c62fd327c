package solver

// memo is what pods of one equivalence class learn for one attempt and share with their
// siblings.
type memo struct {
	// failed[i]: claim i cannot take the attempt, now or later.
	failed []bool
	// noNew, when set, is why no new NodeClaim can take a monotone attempt.
	noNew string
	pools map[*pool]*poolFit
	// shapes are the new-node shapes per NodePool and open keys (see newShapes).
	shapes map[*pool]map[string][]newShape
	// spread marks the claims PodTopologySpread's numbers rejected for a non-monotone
	// attempt; a mark holds while the engine's SpreadEpoch and the claim's labels do.
	spread map[int]spreadMark
	// forGood maps the claims a non-monotone attempt was rejected from for good (resources,
	// host ports, required anti-affinity: simulation.RejectedForGood) to their labels'
	// version; the rejection holds while that does.
	forGood map[int]int
	// affinity is the attempt's required pod affinity rule, whose rejections classes share
	// (run.affinityMarks); set on the attempt's first tryClaims.
	affinity *affinityRule
}

type spreadMark struct {
	epoch         uint64
	labelsVersion int
}

// spreadRejects reports whether claim c is still rejected by the spread of an attempt whose
// current epoch is epoch.
func (m *memo) spreadRejects(c *claim, epoch uint64) bool {
	mark, ok := m.spread[c.index]
	return ok && epoch != 0 && mark.epoch == epoch && mark.labelsVersion == c.labelsVersion
}

func (m *memo) hasFailed(i int) bool { return i < len(m.failed) && m.failed[i] }

// rejectsForGood reports whether claim c is still rejected for good (see forGood).
func (m *memo) rejectsForGood(c *claim) bool {
	version, ok := m.forGood[c.index]
	return ok && version == c.labelsVersion
}

func (m *memo) fail(i int) {
	if i >= len(m.failed) {
		m.failed = append(m.failed, make([]bool, i+1-len(m.failed))...)
	}
	m.failed[i] = true
}

func (r *run) memo(key string) *memo {
	m, ok := r.memos[key]
	if !ok {
		m = &memo{pools: map[*pool]*poolFit{}, shapes: map[*pool]map[string][]newShape{}, spread: map[int]spreadMark{}, forGood: map[int]int{}}
		r.memos[key] = m
	}
	return m
}
