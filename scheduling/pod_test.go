package scheduling

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func term(exprs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: exprs}
}

func expr(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

func podWith(nodeSelector map[string]string, required []corev1.NodeSelectorTerm, preferred ...corev1.PreferredSchedulingTerm) *corev1.Pod {
	pod := &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: nodeSelector}}
	if required != nil || preferred != nil {
		pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: preferred}}
		if required != nil {
			pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: required}
		}
	}
	return pod
}

func describeAll(alts []Requirements) []string {
	out := make([]string, len(alts))
	for i, a := range alts {
		out[i] = a.String()
	}
	return out
}

func TestPodRequirementAlternatives(t *testing.T) {
	in, notIn := corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn
	tests := []struct {
		name string
		pod  *corev1.Pod
		want []string
	}{
		{
			name: "no constraints",
			pod:  podWith(nil, nil),
			want: []string{""},
		},
		{
			name: "nodeSelector with deprecated keys",
			pod: podWith(map[string]string{
				"failure-domain.beta.kubernetes.io/zone": "us-west-2a",
				"beta.kubernetes.io/arch":                "amd64",
				"karpenter.sh/capacity-type":             "spot",
			}, nil),
			want: []string{"karpenter.sh/capacity-type In [spot], kubernetes.io/arch In [amd64], topology.kubernetes.io/zone In [us-west-2a]"},
		},
		{
			// Seed 000's example: the first term allows us-west-2a only; the second, spot in us-west-2d.
			name: "terms are ORed, in order, each with the nodeSelector",
			pod: podWith(map[string]string{"kubernetes.io/os": "linux"}, []corev1.NodeSelectorTerm{
				term(expr(zone, in, "us-west-2a", "us-west-2b"), expr(zone, notIn, "us-west-2b")),
				term(expr("karpenter.sh/capacity-type", in, "spot"), expr(zone, in, "us-west-2d")),
			}),
			want: []string{
				"kubernetes.io/os In [linux], topology.kubernetes.io/zone In [us-west-2a]",
				"karpenter.sh/capacity-type In [spot], kubernetes.io/os In [linux], topology.kubernetes.io/zone In [us-west-2d]",
			},
		},
		{
			name: "term keys intersect with the nodeSelector after translation",
			pod: podWith(map[string]string{"topology.kubernetes.io/zone": "us-west-2a"}, []corev1.NodeSelectorTerm{
				term(expr(ebsZoneKey, in, "us-west-2a", "us-west-2b")),
			}),
			want: []string{"topology.kubernetes.io/zone In [us-west-2a]"},
		},
		{
			name: "empty terms match nothing and are skipped; matchFields are ignored",
			pod: podWith(nil, []corev1.NodeSelectorTerm{
				{},
				{MatchFields: []corev1.NodeSelectorRequirement{expr("metadata.name", in, "node-a")}},
				term(expr(team, in, "a")),
			}),
			want: []string{"", "company.com/team In [a]"},
		},
		{
			name: "only empty terms leave the nodeSelector",
			pod:  podWith(map[string]string{team: "a"}, []corev1.NodeSelectorTerm{{}}),
			want: []string{"company.com/team In [a]"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			alts := PodRequirementAlternatives(tt.pod)
			if got := describeAll(alts); !slices.Equal(got, tt.want) {
				t.Errorf("alternatives = %q, want %q", got, tt.want)
			}
			if got := FromPod(tt.pod).String(); got != tt.want[0] {
				t.Errorf("FromPod = %q, want the first alternative %q", got, tt.want[0])
			}
		})
	}
}

func TestAlternativesDoNotShareState(t *testing.T) {
	pod := podWith(map[string]string{zone: "a"}, []corev1.NodeSelectorTerm{
		term(expr(team, corev1.NodeSelectorOpIn, "x")),
		term(expr(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64")),
	})
	alts := PodRequirementAlternatives(pod)
	if alts[1].Has(team) || alts[0].Has(corev1.LabelArchStable) {
		t.Errorf("alternatives leak into each other: %q", describeAll(alts))
	}
}

func TestPodPreferences(t *testing.T) {
	pref := func(weight int32, exprs ...corev1.NodeSelectorRequirement) corev1.PreferredSchedulingTerm {
		return corev1.PreferredSchedulingTerm{Weight: weight, Preference: term(exprs...)}
	}
	pod := podWith(nil, nil,
		pref(10, expr("beta.kubernetes.io/instance-type", corev1.NodeSelectorOpIn, "m5.large")),
		pref(50, expr(zone, corev1.NodeSelectorOpIn, "us-west-2a")),
		pref(10, expr(team, corev1.NodeSelectorOpIn, "a")),
		pref(80), // empty: a no-op in kube-scheduler
		pref(90, expr(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64")),
	)
	got := PodPreferences(pod)
	var desc []string
	for _, p := range got {
		desc = append(desc, p.Requirements.String())
	}
	want := []string{
		"kubernetes.io/arch In [arm64]",
		"topology.kubernetes.io/zone In [us-west-2a]",
		"node.kubernetes.io/instance-type In [m5.large]",
		"company.com/team In [a]",
	}
	if !slices.Equal(desc, want) {
		t.Errorf("preferences = %q, want heaviest first, ties in pod order: %q", desc, want)
	}
	if weights := []int32{got[0].Weight, got[1].Weight, got[2].Weight, got[3].Weight}; !slices.Equal(weights, []int32{90, 50, 10, 10}) {
		t.Errorf("weights = %v", weights)
	}
	if PodPreferences(podWith(nil, nil)) != nil {
		t.Errorf("a pod without affinity has preferences")
	}
}

func TestFromLabelsKeepsKeys(t *testing.T) {
	r := FromLabels(map[string]string{"beta.kubernetes.io/arch": "amd64"})
	if !r.Has("beta.kubernetes.io/arch") || r.Has(corev1.LabelArchStable) {
		t.Errorf("FromLabels translated a node's label key: %s", r)
	}
}
