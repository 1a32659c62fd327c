package solver

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/joinery-dev/joinery/scheduling"
	"github.com/joinery-dev/joinery/simulation"
)

// attempt is one way of trying a pod: the pod the Filters see (the pod itself, or a copy whose
// preferences are made required) and the node requirements it brings.
type attempt struct {
	pod  *corev1.Pod
	reqs scheduling.Requirements
	// key identifies the attempt among pods of one equivalence class, for memos.
	key string
	// monotone: once the Filters reject the attempt on a node, more pods planned anywhere
	// cannot make them accept it (no topology spread, no required pod affinity), so siblings
	// may skip that node.
	monotone bool
	// topologyKeys are the keys the attempt's spread and pod (anti-)affinity terms and its
	// volumes look at.
	topologyKeys []string
	// kept is the mask of the preferences made required (see preferenceMasks); relaxed marks
	// the attempts of the alternative preferences are relaxed on.
	kept    uint64
	relaxed bool
	// avoidSoftTaints: new NodeClaims may not come from a NodePool with a PreferNoSchedule
	// taint the pod does not tolerate (see softTaintPreference).
	avoidSoftTaints bool
}

// preference is one preferred term of a pod, made required while it is kept.
type preference struct {
	weight int64
	apply  func(a *attempt)
}

// softTaintWeight ranks avoiding NodePools' PreferNoSchedule taints above every other
// preference (ScheduleAnyway spreads weigh math.MaxInt32): like Karpenter, the solver gives it
// up last, after the pod's own preferences; unlike Karpenter, it gives those back once it is
// gone, as for any dropped preference.
const softTaintWeight = math.MaxInt32 + 1

// attempts lists the ways to try pod, strictest first: each required node affinity term in
// order with every preference; then, under Respect, the last term with subsets of the
// preferences in decreasing lexicographic order of weight (see preferenceMasks), so the first
// subset that fits is the heaviest set of preferences that can still be met.
//
// pools are the batch's NodePools: one with a PreferNoSchedule taint the pod does not
// tolerate adds the heaviest preference, to open new NodeClaims elsewhere when it can.
func (s *Solver) attempts(pod *corev1.Pod, pools []*pool) []attempt {
	class := simulation.EquivalenceKey(pod)
	alternatives := scheduling.PodRequirementAlternatives(pod)
	var prefs []preference
	if s.opts.PreferencePolicy == PreferenceRespect {
		prefs = preferences(pod)
		if slices.ContainsFunc(pools, func(p *pool) bool { return untoleratedSoftTaint(p.np.Spec.Template.Spec.Taints, pod) != nil }) {
			prefs = slices.Insert(prefs, 0, preference{weight: softTaintWeight, apply: func(a *attempt) { a.avoidSoftTaints = true }})
		}
	}
	volumeKeys := s.volumes.keys(pod)
	var out []attempt
	add := func(alt int, mask uint64) {
		a := attempt{reqs: alternatives[alt].Clone(), key: fmt.Sprintf("%s/%d/%x", class, alt, mask), kept: mask, relaxed: alt == len(alternatives)-1}
		a.pod = pod
		// Without preferences the pod itself serves every alternative: the Filters accept any
		// of its terms, and the requirements hold the claim to this one.
		if mask != 0 {
			a.pod = variant(pod, alt)
			for i, p := range prefs {
				if mask&prefBit(len(prefs), i) != 0 {
					p.apply(&a)
				}
			}
		}
		a.monotone, a.topologyKeys = inspect(a.pod)
		if len(volumeKeys) > 0 {
			a.topologyKeys = append(a.topologyKeys, volumeKeys...)
			slices.Sort(a.topologyKeys)
			a.topologyKeys = slices.Compact(a.topologyKeys)
		}
		out = append(out, a)
	}
	masks := preferenceMasks(len(prefs))
	for alt := range alternatives {
		add(alt, masks[0])
	}
	for _, mask := range masks[1:] {
		add(len(alternatives)-1, mask)
	}
	return out
}

// maxEnumeratedPreferences bounds the preferences whose subsets are all tried; a pod with more
// drops them one at a time, lightest first.
const maxEnumeratedPreferences = 6

// prefBit is the bit of the i-th heaviest of n preferences in a mask: the heaviest is the most
// significant, so comparing masks compares the kept sets heaviest term first.
func prefBit(n, i int) uint64 { return 1 << (n - 1 - i) }

// preferenceMasks lists the sets of n preferences (heaviest first) to try, as masks: every
// subset in decreasing order, so a heavier preference is dropped only when no set that keeps
// it (with the heavier ones still kept) fits, and the lighter ones are tried again after it
// is dropped. Past maxEnumeratedPreferences: all, then dropping the lightest one at a time.
func preferenceMasks(n int) []uint64 {
	all := uint64(1)<<n - 1
	if n > maxEnumeratedPreferences {
		masks := make([]uint64, 0, n+1)
		for kept := n; kept >= 0; kept-- {
			masks = append(masks, all&^(uint64(1)<<(n-kept)-1))
		}
		return masks
	}
	masks := make([]uint64, 0, all+1)
	for m := all; ; m-- {
		masks = append(masks, m)
		if m == 0 {
			return masks
		}
	}
}

func hasRequiredNodeAffinity(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	return a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil
}

// variant copies pod with its affinity and spread constraints deep-copied, keeping only the
// alt-th required node affinity term.
func variant(pod *corev1.Pod, alt int) *corev1.Pod {
	v := *pod
	v.Spec.Affinity = pod.Spec.Affinity.DeepCopy()
	v.Spec.TopologySpreadConstraints = slices.Clone(pod.Spec.TopologySpreadConstraints)
	if hasRequiredNodeAffinity(&v) {
		terms := v.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		var kept []corev1.NodeSelectorTerm
		for _, t := range terms {
			if len(t.MatchExpressions) > 0 || len(t.MatchFields) > 0 {
				kept = append(kept, t)
			}
		}
		if alt < len(kept) {
			v.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = []corev1.NodeSelectorTerm{kept[alt]}
		}
	}
	return &v
}

// preferences returns pod's preferences heaviest first, so dropping from the end relaxes the
// lowest weight first.
func preferences(pod *corev1.Pod) []preference {
	var out []preference
	affinity := pod.Spec.Affinity
	if affinity != nil && affinity.NodeAffinity != nil {
		for _, term := range affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			if len(term.Preference.MatchExpressions) == 0 {
				continue
			}
			exprs := term.Preference.MatchExpressions
			out = append(out, preference{weight: int64(term.Weight), apply: func(a *attempt) {
				requireNodeExpressions(a.pod, exprs)
				for _, req := range scheduling.FromNodeSelectorRequirements(exprs...) {
					a.reqs.Add(req)
				}
			}})
		}
	}
	if affinity != nil && affinity.PodAffinity != nil {
		for _, term := range affinity.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			t := term.PodAffinityTerm
			out = append(out, preference{weight: int64(term.Weight), apply: func(a *attempt) {
				p := a.pod
				if p.Spec.Affinity.PodAffinity == nil {
					p.Spec.Affinity.PodAffinity = &corev1.PodAffinity{}
				}
				pa := p.Spec.Affinity.PodAffinity
				pa.RequiredDuringSchedulingIgnoredDuringExecution = append(slices.Clip(pa.RequiredDuringSchedulingIgnoredDuringExecution), t)
			}})
		}
	}
	if affinity != nil && affinity.PodAntiAffinity != nil {
		for _, term := range affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			t := term.PodAffinityTerm
			out = append(out, preference{weight: int64(term.Weight), apply: func(a *attempt) {
				p := a.pod
				if p.Spec.Affinity.PodAntiAffinity == nil {
					p.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{}
				}
				pa := p.Spec.Affinity.PodAntiAffinity
				pa.RequiredDuringSchedulingIgnoredDuringExecution = append(slices.Clip(pa.RequiredDuringSchedulingIgnoredDuringExecution), t)
			}})
		}
	}
	for i, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != corev1.ScheduleAnyway {
			continue
		}
		out = append(out, preference{weight: math.MaxInt32, apply: func(a *attempt) {
			a.pod.Spec.TopologySpreadConstraints[i].WhenUnsatisfiable = corev1.DoNotSchedule
		}})
	}
	slices.SortStableFunc(out, func(a, b preference) int { return cmp.Compare(b.weight, a.weight) })
	return out
}

// requireNodeExpressions ANDs exprs into every required node affinity term of p (adding a term
// when p has none).
func requireNodeExpressions(p *corev1.Pod, exprs []corev1.NodeSelectorRequirement) {
	if p.Spec.Affinity.NodeAffinity == nil {
		p.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := p.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil || len(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}
	}
	terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i := range terms {
		terms[i].MatchExpressions = append(slices.Clip(terms[i].MatchExpressions), exprs...)
	}
}

// inspect reports whether pod's Filter outcomes on a node can only get worse as pods are
// added, and the topology keys its spread and pod (anti-)affinity look at.
func inspect(pod *corev1.Pod) (monotone bool, keys []string) {
	monotone = true
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == corev1.DoNotSchedule {
			monotone = false
			keys = append(keys, c.TopologyKey)
		}
	}
	if a := pod.Spec.Affinity; a != nil {
		if a.PodAffinity != nil {
			for _, t := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				monotone = false
				keys = append(keys, t.TopologyKey)
			}
		}
		if a.PodAntiAffinity != nil {
			for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				keys = append(keys, t.TopologyKey)
			}
		}
	}
	slices.Sort(keys)
	return monotone, slices.Compact(keys)
}

// topologyKeysOf lists every key pod's spread constraints and pod (anti-)affinity terms may
// look at, preferred ones included (a preference is tried as required).
func topologyKeysOf(pod *corev1.Pod) []string {
	var keys []string
	for _, c := range pod.Spec.TopologySpreadConstraints {
		keys = append(keys, c.TopologyKey)
	}
	a := pod.Spec.Affinity
	if a == nil {
		return keys
	}
	for _, terms := range [][]corev1.PodAffinityTerm{podAffinityTerms(a.PodAffinity), podAntiAffinityTerms(a.PodAntiAffinity)} {
		for _, t := range terms {
			keys = append(keys, t.TopologyKey)
		}
	}
	return keys
}

func podAffinityTerms(pa *corev1.PodAffinity) []corev1.PodAffinityTerm {
	if pa == nil {
		return nil
	}
	terms := slices.Clone(pa.RequiredDuringSchedulingIgnoredDuringExecution)
	for _, w := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
		terms = append(terms, w.PodAffinityTerm)
	}
	return terms
}

func podAntiAffinityTerms(pa *corev1.PodAntiAffinity) []corev1.PodAffinityTerm {
	if pa == nil {
		return nil
	}
	terms := slices.Clone(pa.RequiredDuringSchedulingIgnoredDuringExecution)
	for _, w := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
		terms = append(terms, w.PodAffinityTerm)
	}
	return terms
}
