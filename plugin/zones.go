package plugin

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/joinery-dev/joinery/scheduling"
)

// Values of the zone label of karpenter_scheduler_pending_pods_by_effective_zone_count besides
// a zone's name, Karpenter's.
const (
	zoneFlexible = "flexible" // several zones, or no zone constraint
	zoneNone     = "none"     // no zone can satisfy the pod
)

// effectiveZone is the zone pod's own zone signals allow: its nodeSelector with each of its
// required node affinity terms (which kube-scheduler ORs), unioned over the terms.
func effectiveZone(pod *corev1.Pod) string {
	zones := sets.New[string]()
	for _, alt := range scheduling.PodRequirementAlternatives(pod) {
		r := alt.Get(corev1.LabelTopologyZone)
		if r.Operator() != corev1.NodeSelectorOpIn && r.Operator() != corev1.NodeSelectorOpDoesNotExist {
			return zoneFlexible // Exists, NotIn or no constraint: any or many zones
		}
		zones.Insert(r.Values()...)
	}
	switch zones.Len() {
	case 0:
		return zoneNone
	case 1:
		return sets.List(zones)[0]
	default:
		return zoneFlexible
	}
}

// recordEffectiveZones replaces the gauge with the counts of pods, the batch's pending pods.
func recordEffectiveZones(pods []*corev1.Pod) {
	pendingPodsByZone.Reset()
	counts := map[string]int{}
	for _, pod := range pods {
		counts[effectiveZone(pod)]++
	}
	for zone, n := range counts {
		pendingPodsByZone.WithLabelValues(metricController, zone).Set(float64(n))
	}
}
