package scheduling

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// FromNodeSelectorRequirements builds requirements from node selector expressions (a node
// affinity term, a NodePool's requirements, a PersistentVolume's node affinity), translating
// deprecated and aliased keys to their well-known equivalents (NormalizeLabelKey).
func FromNodeSelectorRequirements(exprs ...corev1.NodeSelectorRequirement) Requirements {
	r := make(Requirements, len(exprs))
	addExpressions(r, exprs)
	return r
}

func addExpressions(r Requirements, exprs []corev1.NodeSelectorRequirement) {
	for _, e := range exprs {
		r.Add(NewRequirement(NormalizeLabelKey(e.Key), e.Operator, e.Values...))
	}
}

// FromLabels returns one In requirement per label. Keys are taken as they are: labels describe
// a node (or a NodePool's template), and a node carries exactly the keys it is given.
func FromLabels(labels map[string]string) Requirements {
	r := make(Requirements, len(labels))
	for k, v := range labels {
		r.Add(NewRequirement(k, corev1.NodeSelectorOpIn, v))
	}
	return r
}

// fromNodeSelector is a pod's nodeSelector as requirements, keys normalized.
func fromNodeSelector(pod *corev1.Pod) Requirements {
	r := make(Requirements, len(pod.Spec.NodeSelector))
	for k, v := range pod.Spec.NodeSelector {
		r.Add(NewRequirement(NormalizeLabelKey(k), corev1.NodeSelectorOpIn, v))
	}
	return r
}

// FromPod returns the requirements a pod places on node labels when it is first tried: its
// nodeSelector and its first required node affinity term. Later terms are alternatives, tried in
// order when the first cannot be met (PodRequirementAlternatives); preferred terms are returned
// by PodPreferences.
func FromPod(pod *corev1.Pod) Requirements {
	return PodRequirementAlternatives(pod)[0]
}

// PodRequirementAlternatives returns one Requirements per required node affinity term, in the
// pod's order, each intersected with the nodeSelector; kube-scheduler ORs the terms, and joinery,
// like Karpenter, tries them one at a time. A pod without required node affinity has a single
// alternative, its nodeSelector.
//
// A term with neither matchExpressions nor matchFields matches no node, so it is left out; if
// every term is like that, the result is the nodeSelector alone and the NodeAffinity Filter
// rejects the pod on the concrete node. matchFields are ignored: the only field they select is
// metadata.name, which pins a pod to an existing node (the DaemonSet controller does this per
// node), and a hypothetical node has no name yet. Ignoring them is what lets a DaemonSet's pod
// stand for the pod it will run on a new node; for any other pinned pod the Filters, which see
// the real node name, remain the authority.
func PodRequirementAlternatives(pod *corev1.Pod) []Requirements {
	base := fromNodeSelector(pod)
	terms := requiredTerms(pod)
	alternatives := make([]Requirements, 0, max(len(terms), 1))
	for _, term := range terms {
		if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
			continue
		}
		alt := base.Clone()
		addExpressions(alt, term.MatchExpressions)
		alternatives = append(alternatives, alt)
	}
	if len(alternatives) == 0 {
		alternatives = append(alternatives, base)
	}
	return alternatives
}

func requiredTerms(pod *corev1.Pod) []corev1.NodeSelectorTerm {
	affinity := pod.Spec.Affinity
	if affinity == nil || affinity.NodeAffinity == nil || affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	return affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
}

// WeightedRequirements is one preferred node affinity term.
type WeightedRequirements struct {
	Weight       int32
	Requirements Requirements
}

// PodPreferences returns the pod's preferred node affinity terms, heaviest first (ties keep the
// pod's order). joinery first treats preferences as requirements and, when they cannot be met,
// relaxes them one at a time from the end of this list: the lowest weight is relaxed first and
// the heaviest kept longest. Terms without label expressions select nothing joinery can act on
// and are left out (matchFields are ignored as in PodRequirementAlternatives).
func PodPreferences(pod *corev1.Pod) []WeightedRequirements {
	affinity := pod.Spec.Affinity
	if affinity == nil || affinity.NodeAffinity == nil {
		return nil
	}
	var out []WeightedRequirements
	for _, term := range affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
		if len(term.Preference.MatchExpressions) == 0 {
			continue
		}
		out = append(out, WeightedRequirements{
			Weight:       term.Weight,
			Requirements: FromNodeSelectorRequirements(term.Preference.MatchExpressions...),
		})
	}
	slices.SortStableFunc(out, func(a, b WeightedRequirements) int { return cmp.Compare(b.Weight, a.Weight) })
	return out
}
