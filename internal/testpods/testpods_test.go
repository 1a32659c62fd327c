package testpods

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNew(t *testing.T) {
	scheduledBy := func(p *corev1.Pod) { p.Spec.SchedulerName = "joinery" }
	got := New("web-0", "250m", "1Gi", scheduledBy, Labelled("app", "web"))
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			SchedulerName: "joinery",
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("1Gi"),
				}},
			}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("New (-want +got):\n%s", diff)
	}
}

func TestNumbered(t *testing.T) {
	cases := []struct {
		n    int
		want []string
	}{{0, []string{}}, {1, []string{"db-0"}}, {3, []string{"db-0", "db-1", "db-2"}}}
	for _, tc := range cases {
		got := Numbered(tc.n, "db", "1", "2Gi", Labelled("app", "db"))
		names := []string{}
		for _, p := range got {
			names = append(names, p.Name)
			if p.Labels["app"] != "db" {
				t.Errorf("Numbered(%d): pod %s has labels %v, want app=db", tc.n, p.Name, p.Labels)
			}
		}
		if diff := cmp.Diff(tc.want, names); diff != "" {
			t.Errorf("Numbered(%d) names (-want +got):\n%s", tc.n, diff)
		}
	}
	// Each pod is built afresh: labelling one must not label its siblings.
	group := Numbered(2, "db", "1", "2Gi")
	group[0].Labels["only"] = "first"
	if _, shared := group[1].Labels["only"]; shared {
		t.Error("Numbered pods share one Labels map")
	}
}

// base is a pod as New builds it, before options.
func base() *corev1.Pod { return New("p", "1", "1Gi") }

func TestOptions(t *testing.T) {
	const zone = corev1.LabelTopologyZone
	web := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	cases := []struct {
		name string
		opts []Option
		want func(p *corev1.Pod)
	}{{
		name: "labels accumulate and the last value of a key wins",
		opts: []Option{Labelled("app", "web"), Labelled("tier", "front"), Labelled("app", "api")},
		want: func(p *corev1.Pod) { p.Labels = map[string]string{"app": "api", "tier": "front"} },
	}, {
		name: "node selector created on first use",
		opts: []Option{Selecting(zone, "a"), Selecting("disk", "ssd")},
		want: func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{zone: "a", "disk": "ssd"} },
	}, {
		name: "tolerations of any value and effect, in order",
		opts: []Option{Tolerating("gpu"), Tolerating("spot")},
		want: func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}, {Key: "spot", Operator: corev1.TolerationOpExists}}
		},
	}, {
		name: "host port on the first container",
		opts: []Option{HostPort(8080)},
		want: func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080, Protocol: corev1.ProtocolTCP}}
		},
	}, {
		name: "spread with max skew 1 over the app's pods",
		opts: []Option{Spread(zone, "web", corev1.DoNotSchedule), Spread(corev1.LabelHostname, "web", corev1.ScheduleAnyway)},
		want: func(p *corev1.Pod) {
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{
				{MaxSkew: 1, TopologyKey: zone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: web},
				{MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: web},
			}
		},
	}, {
		name: "required and preferred anti-affinity share one PodAntiAffinity",
		opts: []Option{AntiAffine(corev1.LabelHostname, "web"), PreferAntiAffine(10, zone, "web")},
		want: func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelHostname, LabelSelector: web}},
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
					{Weight: 10, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: zone, LabelSelector: web}},
				},
			}}
		},
	}, {
		name: "node preferences keep the pod anti-affinity already set",
		opts: []Option{AntiAffine(corev1.LabelHostname, "web"), PreferNode(50, zone, "a", "b"), PreferNode(1, "disk", "ssd")},
		want: func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{
				PodAntiAffinity: &corev1.PodAntiAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelHostname, LabelSelector: web}},
				},
				NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{
					{Weight: 50, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: zone, Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}}}}},
					{Weight: 1, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}}}}},
				}},
			}
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := base()
			for _, opt := range tc.opts {
				opt(got)
			}
			want := base()
			tc.want(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("pod (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSelectorsAreFresh(t *testing.T) {
	// Each option gets its own selector: a test that edits one pod's selector must not
	// change another's.
	a, b := AppSelector("web"), AppSelector("web")
	a.MatchLabels["app"] = "api"
	if got := b.MatchLabels["app"]; got != "web" {
		t.Errorf("second selector's app = %q after editing the first, want web", got)
	}
}
