package disruption

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Consolidation plans candidates' pods as provisioning does: on existing nodes the Filters
// decide (preferences only score there), and new capacity keeps preferred node affinity, pod
// (anti-)affinity and ScheduleAnyway spreads as long as they can be met. So a pod's
// preferences can make a move need more, or pricier, new capacity than the pod alone would,
// and the move is refused. logPreferenceBlockers finds and logs such pods.

// hasPreferences reports whether pod has a preference that shapes new capacity.
func hasPreferences(p *corev1.Pod) bool {
	if a := p.Spec.Affinity; a != nil {
		if a.NodeAffinity != nil && len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 ||
			a.PodAffinity != nil && len(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 ||
			a.PodAntiAffinity != nil && len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
			return true
		}
	}
	for _, c := range p.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == corev1.ScheduleAnyway {
			return true
		}
	}
	return false
}

// withoutPreferences is p without its preferences: the Filters see the same pod (they
// ignore preferences), the solver has nothing to keep.
func withoutPreferences(p *corev1.Pod) *corev1.Pod {
	out := p.DeepCopy()
	if a := out.Spec.Affinity; a != nil {
		if a.NodeAffinity != nil {
			a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = nil
		}
		if a.PodAffinity != nil {
			a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = nil
		}
		if a.PodAntiAffinity != nil {
			a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = nil
		}
	}
	var spreads []corev1.TopologySpreadConstraint
	for _, c := range out.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != corev1.ScheduleAnyway {
			spreads = append(spreads, c)
		}
	}
	out.Spec.TopologySpreadConstraints = spreads
	return out
}

// logPreferenceBlockers is called for a move refused after its simulation needed new
// capacity. The candidates' pods with preferences that were planned onto that capacity are
// simulated once more with their preferences dropped; if the move would then be accepted,
// they are logged as the pods whose preferences prevent it. Each pod is looked at once per
// pass (per Cluster), which bounds the extra simulations and the log lines.
func (c *Consolidation) logPreferenceBlockers(ctx context.Context, cluster *Cluster, prices *priceBook, cands []*Candidate, single bool, sim *Simulation) {
	var suspects []*corev1.Pod
	for _, cand := range cands {
		for _, p := range cand.Pods {
			if isReplacement(sim.Destinations[p.UID]) && hasPreferences(p) && c.preferenceLooks().first(cluster, p.UID) {
				suspects = append(suspects, p)
			}
		}
	}
	if len(suspects) == 0 {
		return
	}
	stripped := make([]*Candidate, len(cands))
	for i, cand := range cands {
		cp := *cand
		cp.Pods = make([]*corev1.Pod, len(cand.Pods))
		for j, p := range cand.Pods {
			cp.Pods[j] = p
			if hasPreferences(p) {
				cp.Pods[j] = withoutPreferences(p)
			}
		}
		stripped[i] = &cp
	}
	logger := log.FromContext(ctx)
	cmd, _, err := c.judge(ctx, cluster, prices, stripped, single, false)
	if refusalOf(err) != nil {
		return // refused without the preferences too: they are not what prevents it
	}
	if err != nil {
		logger.V(1).Info("could not check whether preferences prevent consolidation", "candidates", candidateList(cands), "error", err.Error())
		return
	}
	pods := make([]string, len(suspects))
	for i, p := range suspects {
		pods[i] = p.Namespace + "/" + p.Name
	}
	logger.Info("pods' preferred affinities or spreads prevent consolidation", "candidates", candidateList(cands),
		"pods", pods, "withoutPreferences", fmt.Sprintf("%s with %d replacement(s)", cmd.Decision(), len(cmd.Replacements)))
}

// preferenceLooks remembers which pods' preferences were looked at in one pass (one Cluster),
// so each is looked at, and logged, once per pass. A new Cluster starts afresh.
type preferenceLooks struct {
	mu      sync.Mutex
	cluster *Cluster
	looked  map[types.UID]bool
}

// first reports whether uid's preferences have not been looked at yet in the pass of cluster,
// and marks them looked at.
func (l *preferenceLooks) first(cluster *Cluster, uid types.UID) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cluster != cluster {
		l.cluster, l.looked = cluster, map[types.UID]bool{}
	}
	if l.looked[uid] {
		return false
	}
	l.looked[uid] = true
	return true
}

// preferenceLooks is c's memo of looked-at preferences, made on first use for a
// Consolidation not built by GracefulMethods.
func (c *Consolidation) preferenceLooks() *preferenceLooks {
	if c.looks == nil {
		c.looks = &preferenceLooks{}
	}
	return c.looks
}
