package disruption

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/joinery-dev/joinery/simulation/buffer"
)

// Disruption cost and the order consolidation tries candidates in.

// order sorts candidates by disruption cost, cheapest to disrupt first (ties by name).
func (c *Consolidation) order(cands []*Candidate, now time.Time) []*Candidate {
	type costed struct {
		cand *Candidate
		cost float64
	}
	cs := make([]costed, len(cands))
	for i, cand := range cands {
		cs[i] = costed{cand, DisruptionCost(cand, now)}
	}
	slices.SortStableFunc(cs, func(a, b costed) int {
		if a.cost != b.cost {
			if a.cost < b.cost {
				return -1
			}
			return 1
		}
		return strings.Compare(a.cand.Name(), b.cand.Name())
	})
	out := make([]*Candidate, len(cs))
	for i := range cs {
		out[i] = cs[i].cand
	}
	return out
}

// PodDeletionCostAnnotationKey is the ReplicaSet controller's pod-deletion-cost annotation.
const PodDeletionCostAnnotationKey = "controller.kubernetes.io/pod-deletion-cost"

// DisruptionCost is how costly removing the candidate is: per pod 1 (a CapacityBuffer
// virtual pod BufferPodCost, nothing more), plus its deletion cost
// (scaled by 2^-27) and its priority (scaled by 2^-25), each pod's share kept in [-10, 10];
// the sum is scaled by the fraction of the NodeClaim's expireAfter still ahead, so nodes
// expiring soon are cheaper to disrupt.
func DisruptionCost(cand *Candidate, now time.Time) float64 {
	total := 0.0
	for _, p := range cand.Pods {
		if buffer.IsVirtual(p) {
			total += BufferPodCost
			continue
		}
		total += podDisruptionCost(p)
	}
	if d := cand.NodeClaim.Spec.ExpireAfter.Duration; d != nil && *d > 0 {
		left := cand.NodeClaim.CreationTimestamp.Add(*d).Sub(now)
		total *= math.Max(0, math.Min(1, float64(left)/float64(*d)))
	}
	return total
}

// podDisruptionCost is one pod's share of a node's disruption cost: 1, plus its deletion cost
// scaled by 2^-27 and its priority scaled by 2^-25, kept in [-10, 10].
func podDisruptionCost(p *corev1.Pod) float64 {
	cost := 1.0
	if v, ok := p.Annotations[PodDeletionCostAnnotationKey]; ok {
		if n, err := strconv.ParseFloat(v, 64); err == nil {
			cost += n / math.Pow(2, 27)
		}
	}
	if p.Spec.Priority != nil {
		cost += float64(*p.Spec.Priority) / math.Pow(2, 25)
	}
	return math.Max(-10, math.Min(10, cost))
}
