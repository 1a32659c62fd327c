package solver

import (
	"encoding/json"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// affinityRule is what InterPodAffinity's required pod affinity check looks at for an
// attempt: the pod's namespace, labels and required pod affinity terms. The check does not
// depend on the pod's requests, so its rejections (simulation.RejectedByAffinity) are shared
// by every class with the same rule, whatever their sizes.
type affinityRule struct {
	// keys are the indices (in run.domainKeys) of the terms' topology keys.
	keys []int
	// marks[i], when set, records that the Filters rejected claim i for the rule: it stands
	// while the claim's labels are unchanged and no pod was added in its domains of keys.
	marks []affinityMark
}

type affinityMark struct {
	// labelsVersion is the claim's plus one (0: no mark).
	labelsVersion int
	adds          int
}

// domains follows, per topology key of the batch and value, the pods added during the run,
// for affinity marks; claims' domains are interned as ids.
type domains struct {
	keys  []string       // the batch's topology keys, sorted
	index map[string]int // key → index in keys
	ids   []map[string]int
	adds  []int // per domain id
}

func newDomains(keys []string) domains {
	slices.Sort(keys)
	d := domains{keys: keys, index: map[string]int{}, ids: make([]map[string]int, len(keys))}
	for i, key := range keys {
		d.index[key] = i
		d.ids[i] = map[string]int{}
	}
	return d
}

// id interns the domain value of key number k.
func (d *domains) id(k int, value string) int {
	id, ok := d.ids[k][value]
	if !ok {
		id = len(d.adds)
		d.ids[k][value] = id
		d.adds = append(d.adds, 0)
	}
	return id
}

// claimDomains returns the ids of claim c's domains per topology key (-1 where its node has
// no value), cached while its labels are unchanged.
func (r *run) claimDomains(c *claim) []int {
	if c.domainsAt == c.labelsVersion+1 {
		return c.domainIDs
	}
	c.domainIDs = c.domainIDs[:0]
	for k, key := range r.domains.keys {
		id := -1
		if value, ok := c.domain(key); ok {
			id = r.domains.id(k, value)
		}
		c.domainIDs = append(c.domainIDs, id)
	}
	c.domainsAt = c.labelsVersion + 1
	return c.domainIDs
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

// affinityRuleOf returns the shared rule of attempt pod's required pod affinity, or nil when
// it has none or looks at a key the run does not follow.
func (r *run) affinityRuleOf(pod *corev1.Pod) *affinityRule {
	a := pod.Spec.Affinity
	if a == nil || a.PodAffinity == nil || len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 {
		return nil
	}
	terms := a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	var keys []int
	for _, t := range terms {
		k, ok := r.domains.index[t.TopologyKey]
		if !ok {
			return nil
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	key, err := json.Marshal(struct {
		Namespace string                   `json:"ns"`
		Labels    map[string]string        `json:"labels,omitempty"`
		Terms     []corev1.PodAffinityTerm `json:"terms"`
	}{pod.Namespace, pod.Labels, terms})
	if err != nil {
		return nil
	}
	rule, ok := r.affinityRules[string(key)]
	if !ok {
		rule = &affinityRule{keys: slices.Compact(keys)}
		r.affinityRules[string(key)] = rule
	}
	return rule
}

// notePodAdded counts a pod added to a node in the node's domain of each topology key of the
// batch (domain gives the node's value of a key), so that the affinity marks of claims in
// those domains lapse: the pod may be one their rule selects.
func (r *run) notePodAdded(domain func(key string) (string, bool)) {
	for k, key := range r.domains.keys {
		if value, ok := domain(key); ok {
			r.domains.adds[r.domains.id(k, value)]++
		}
	}
}

// nodeDomain returns the value of key on a node with labels.
func nodeDomain(labels map[string]string) func(string) (string, bool) {
	return func(key string) (string, bool) {
		value, ok := labels[key]
		return value, ok
	}
}

// addsAround sums the pods added in claim c's domains of the rule's keys.
func (r *run) addsAround(c *claim, rule *affinityRule) int {
	ids := r.claimDomains(c)
	sum := 0
	for _, k := range rule.keys {
		if id := ids[k]; id >= 0 {
			sum += r.domains.adds[id]
		}
	}
	return sum
}

// noteAffinityRejection records that claim c was rejected for rule.
func (r *run) noteAffinityRejection(rule *affinityRule, c *claim) {
	if rule == nil {
		return
	}
	rule.marks = grown(rule.marks, c.index)
	rule.marks[c.index] = affinityMark{labelsVersion: c.labelsVersion + 1, adds: r.addsAround(c, rule)}
}

// affinityRejects reports whether claim c still stands rejected for rule, by whichever class
// of the rule tried it.
func (r *run) affinityRejects(rule *affinityRule, c *claim) bool {
	if rule == nil || c.index >= len(rule.marks) || r.s.exhaustive {
		return false
	}
	mark := rule.marks[c.index]
	return mark.labelsVersion == c.labelsVersion+1 && mark.adds == r.addsAround(c, rule)
}
