package plugin

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-base/metrics/testutil"
)

func TestEffectiveZone(t *testing.T) {
	zoneIn := func(zones ...string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: zones}}}
	}
	pod := func(selector map[string]string, terms ...corev1.NodeSelectorTerm) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: selector}}
		if len(terms) > 0 {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
		}
		return p
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"no zone signal: flexible", pod(nil), zoneFlexible},
		{"nodeSelector pins a zone", pod(map[string]string{corev1.LabelTopologyZone: "zone-a"}), "zone-a"},
		{"the beta zone label counts as the zone", pod(map[string]string{corev1.LabelFailureDomainBetaZone: "zone-b"}), "zone-b"},
		{"affinity allows two zones: flexible", pod(nil, zoneIn("zone-a", "zone-b")), zoneFlexible},
		{"selector and affinity intersect to one", pod(map[string]string{corev1.LabelTopologyZone: "zone-a"}, zoneIn("zone-a", "zone-b")), "zone-a"},
		{"selector and affinity disagree: none", pod(map[string]string{corev1.LabelTopologyZone: "zone-a"}, zoneIn("zone-b")), zoneNone},
		{"two terms of one zone each: flexible", pod(nil, zoneIn("zone-a"), zoneIn("zone-b")), zoneFlexible},
		{"NotIn leaves many zones: flexible", pod(nil, corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"zone-a"}}}}), zoneFlexible},
		{"DoesNotExist: no node has no zone", pod(nil, corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpDoesNotExist}}}), zoneNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := effectiveZone(tt.pod); got != tt.want {
				t.Errorf("effectiveZone = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRecordEffectiveZones: the gauge holds the last batch's counts only.
func TestRecordEffectiveZones(t *testing.T) {
	RegisterMetrics()
	a := &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: map[string]string{corev1.LabelTopologyZone: "zone-a"}}}
	recordEffectiveZones([]*corev1.Pod{a, a, {}})
	recordEffectiveZones([]*corev1.Pod{a, {}, {}})
	for zone, want := range map[string]float64{"zone-a": 1, zoneFlexible: 2} {
		got, err := testutil.GetGaugeMetricValue(pendingPodsByZone.WithLabelValues(metricController, zone))
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("pending_pods_by_effective_zone_count{zone=%q} = %v, want %v", zone, got, want)
		}
	}
}
