package simulation

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
)

// InterPodAffinity's PreFilter matches every pod of every node it is given against the
// incoming pod's required (anti-)affinity terms (getIncomingAffinityAntiAffinityCounts), and
// it is given every node. A node none of whose pods carries a label a term requires adds
// nothing to those counts, so the engine gives it only the nodes that hold a pod with such a
// label: the counts, and so the state, are the same. Consolidation's decisions compute one
// such state per anti-affinity group over the whole cluster, which made this scan most of a
// decision's CPU at 2,000 nodes.

// labelIndex names, per pod label ("key=value") and per label key ("key"), the nodes that
// hold or held a pod carrying it: a superset of the nodes whose pods carry it now, which is
// all a PreFilter node list needs. It covers every NodeInfo a Revert can put back (those the
// journal keeps), so it stays a superset across forks without following removals.
type labelIndex map[string]map[string]struct{}

func (ix labelIndex) add(pod *corev1.Pod, node string) {
	for k, v := range pod.Labels {
		ix.insert(k, node)
		ix.insert(k+"="+v, node)
	}
}

func (ix labelIndex) insert(key, node string) {
	nodes := ix[key]
	if nodes == nil {
		nodes = map[string]struct{}{}
		ix[key] = nodes
	}
	nodes[node] = struct{}{}
}

// labelNodes returns the snapshot's label index, building it on first use after a Reset from
// the nodes in the snapshot and those the open forks' journal would restore.
func (s *Snapshot) labelNodes() labelIndex {
	if s.labels != nil {
		return s.labels
	}
	ix := labelIndex{}
	addNode := func(ni fwk.NodeInfo) {
		name := ni.Node().Name
		for _, p := range ni.GetPods() {
			ix.add(p.GetPod(), name)
		}
	}
	for _, ni := range s.list {
		addNode(ni)
	}
	for _, c := range s.journal {
		if c.prev != nil {
			addNode(c.prev)
		}
	}
	s.labels = ix
	return ix
}

// preFilterNodes is the node list PreFilter plugin p gets for pod: all of nodes, except that
// InterPodAffinity gets those that may hold a pod one of pod's required terms matches.
func (e *Engine) preFilterNodes(p preFilterPlugin, pod *corev1.Pod, nodes []fwk.NodeInfo) []fwk.NodeInfo {
	if p.name != names.InterPodAffinity || e.fullAffinityScan {
		return nodes
	}
	a := pod.Spec.Affinity
	if a == nil {
		return nodes // no terms: the plugin does not scan them
	}
	var terms []corev1.PodAffinityTerm
	if a.PodAffinity != nil {
		terms = append(terms, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
	}
	if a.PodAntiAffinity != nil {
		terms = append(terms, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
	}
	if len(terms) == 0 {
		return nodes
	}
	ix := e.snapshot.labelNodes()
	wanted := map[string]struct{}{}
	for _, term := range terms {
		keys := requiredLabels(term.LabelSelector)
		if keys == nil {
			return nodes // the term may match a pod without any particular label
		}
		for _, key := range keys {
			for node := range ix[key] {
				wanted[node] = struct{}{}
			}
		}
	}
	out := make([]fwk.NodeInfo, 0, len(wanted))
	for _, ni := range nodes {
		if _, ok := wanted[ni.Node().Name]; ok {
			out = append(out, ni)
		}
	}
	return out
}

// requiredLabels returns, for a term's label selector, the index keys of one requirement
// every pod it matches meets: such a pod carries one of them. It is nil when the selector
// requires no label (nil, empty, only NotIn and DoesNotExist, or not valid), so any pod may
// match. The term's matchLabelKeys and mismatchLabelKeys only add requirements to the
// selector, so what the written selector requires the merged one requires too.
func requiredLabels(sel *metav1.LabelSelector) []string {
	if sel == nil {
		return nil
	}
	// One requirement is enough: the one naming the fewest labels (a matchLabels pair).
	for k, v := range sel.MatchLabels {
		return []string{k + "=" + v}
	}
	var best []string
	for _, r := range sel.MatchExpressions {
		var keys []string
		switch r.Operator {
		case metav1.LabelSelectorOpIn:
			for _, v := range r.Values {
				keys = append(keys, r.Key+"="+v)
			}
		case metav1.LabelSelectorOpExists:
			keys = []string{r.Key}
		default:
			continue
		}
		if len(keys) == 0 {
			return nil // In without values does not parse: leave the plugin to say so
		}
		if best == nil || len(keys) < len(best) {
			best = keys
		}
	}
	return best
}
