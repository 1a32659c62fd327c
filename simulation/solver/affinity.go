package solver

import (
	"encoding/json"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// affinityRule identifies what InterPodAffinity's required pod affinity check looks at for
// an attempt: the pod's namespace, labels and required pod affinity terms (the check does
// not depend on the pod's requests, so it is shared by classes that differ in size).
type affinityRule struct {
	// key is "" when the attempt has no required pod affinity, or looks at a topology key
	// the run does not follow (see notePodAdded): then nothing is shared.
	key          string
	topologyKeys []string
}

// affinityMark records that the Filters rejected a claim for an affinity rule
// (simulation.RejectedByAffinity): it stands while the claim's labels are unchanged and no
// pod was added in its domains of the rule's topology keys.
type affinityMark struct {
	labelsVersion int
	adds          int
}

// affinityRuleOf describes attempt pod's required pod affinity (see affinityRule).
func (r *run) affinityRuleOf(pod *corev1.Pod) *affinityRule {
	a := pod.Spec.Affinity
	if a == nil || a.PodAffinity == nil || len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 {
		return &affinityRule{}
	}
	terms := a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	var keys []string
	for _, t := range terms {
		if !r.topologyKeys.Has(t.TopologyKey) {
			return &affinityRule{}
		}
		keys = append(keys, t.TopologyKey)
	}
	slices.Sort(keys)
	key, err := json.Marshal(struct {
		Namespace string                   `json:"ns"`
		Labels    map[string]string        `json:"labels,omitempty"`
		Terms     []corev1.PodAffinityTerm `json:"terms"`
	}{pod.Namespace, pod.Labels, terms})
	if err != nil {
		return &affinityRule{}
	}
	return &affinityRule{key: string(key), topologyKeys: slices.Compact(keys)}
}

// notePodAdded counts a pod added to a node in the node's domain of each topology key of the
// batch (domain gives the node's value of a key), so that affinity marks of claims in those
// domains lapse: the pod may be one their rule selects.
func (r *run) notePodAdded(domain func(key string) (string, bool)) {
	for key := range r.topologyKeys {
		value, ok := domain(key)
		if !ok {
			continue
		}
		if r.domainAdds[key] == nil {
			r.domainAdds[key] = map[string]int{}
		}
		r.domainAdds[key][value]++
	}
}

// addsAround sums the pods added in claim c's domains of keys.
func (r *run) addsAround(c *claim, keys []string) int {
	sum := 0
	for _, key := range keys {
		if value, ok := c.domain(key); ok {
			sum += r.domainAdds[key][value]
		}
	}
	return sum
}

// domain returns the value of key on claim c's node: its label, or for the hostname, which
// the solver leaves to the snapshot, the node's name (simulation.NodeTemplate).
func (c *claim) domain(key string) (string, bool) {
	value, ok := c.currentLabels()[key]
	if !ok && key == corev1.LabelHostname {
		return c.name, true
	}
	return value, ok
}

// nodeDomain returns the value of key on a node with labels.
func nodeDomain(labels map[string]string) func(string) (string, bool) {
	return func(key string) (string, bool) {
		value, ok := labels[key]
		return value, ok
	}
}

// noteAffinityRejection records that claim c was rejected for m's affinity rule.
func (r *run) noteAffinityRejection(m *memo, c *claim) {
	rule := m.affinity
	if rule == nil || rule.key == "" {
		return
	}
	marks := r.affinityMarks[rule.key]
	if marks == nil {
		marks = map[int]affinityMark{}
		r.affinityMarks[rule.key] = marks
	}
	marks[c.index] = affinityMark{labelsVersion: c.labelsVersion, adds: r.addsAround(c, rule.topologyKeys)}
}

// affinityRejects reports whether claim c still stands rejected for m's affinity rule, by
// whichever class of the rule tried it.
func (r *run) affinityRejects(m *memo, c *claim) bool {
	rule := m.affinity
	if rule == nil || rule.key == "" || r.s.exhaustive {
		return false
	}
	mark, ok := r.affinityMarks[rule.key][c.index]
	return ok && mark.labelsVersion == c.labelsVersion && mark.adds == r.addsAround(c, rule.topologyKeys)
}
