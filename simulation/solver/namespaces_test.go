package solver

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/internal/testpods"
	"github.com/joinery-dev/joinery/simulation"
)

// inNamespace moves a pod to namespace ns.
func inNamespace(ns string) podOption { return func(p *corev1.Pod) { p.Namespace = ns } }

// affineAcross requires a node shared (by key) with a pod of app in the namespaces the term
// names or selects.
func affineAcross(key, app string, namespaces []string, selector *metav1.LabelSelector) podOption {
	return func(p *corev1.Pod) {
		a := testpods.Affinity(p)
		if a.PodAffinity == nil {
			a.PodAffinity = &corev1.PodAffinity{}
		}
		a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution,
			corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: testpods.AppSelector(app), Namespaces: namespaces, NamespaceSelector: selector})
	}
}

// antiAffineAcross is affineAcross for required anti-affinity.
func antiAffineAcross(key, app string, namespaces []string, selector *metav1.LabelSelector) podOption {
	return func(p *corev1.Pod) {
		a := testpods.Affinity(p)
		if a.PodAntiAffinity == nil {
			a.PodAntiAffinity = &corev1.PodAntiAffinity{}
		}
		a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution,
			corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: testpods.AppSelector(app), Namespaces: namespaces, NamespaceSelector: selector})
	}
}

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// TestCrossNamespaceAffinity: a pod's affinity terms reach the namespaces they name or select
// (by the namespaces' labels), as kube-scheduler evaluates them; a follower placed before its
// anchor in the solver's order is tried again once the anchor is planned.
func TestCrossNamespaceAffinity(t *testing.T) {
	namespaces := []runtime.Object{
		namespace("team-a", map[string]string{"team": "a"}),
		namespace("team-b", map[string]string{"team": "b"}),
		namespace("team-c", map[string]string{"team": "c"}),
	}
	teamB := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}
	teamC := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "c"}}
	anchor := func(opts ...podOption) *corev1.Pod {
		return testPod("anchor", "1", "1Gi", append([]podOption{inNamespace("team-b"), labelled("app", "anchor")}, opts...)...)
	}
	follower := func(opt podOption) *corev1.Pod {
		return testPod("follower", "1", "1Gi", inNamespace("team-a"), labelled("app", "follower"), opt)
	}
	cases := []struct {
		name  string
		batch []*corev1.Pod
		// together: anchor and follower share one NodeClaim; apart: one each; stranded: the
		// follower is unschedulable.
		want string
	}{{
		name:  "affinity by namespaces",
		batch: []*corev1.Pod{anchor(), follower(affineAcross(corev1.LabelHostname, "anchor", []string{"team-b"}, nil))},
		want:  "together",
	}, {
		name:  "affinity by namespace selector",
		batch: []*corev1.Pod{anchor(), follower(affineAcross(corev1.LabelHostname, "anchor", nil, teamB))},
		want:  "together",
	}, {
		name:  "affinity by the empty namespace selector: every namespace",
		batch: []*corev1.Pod{anchor(), follower(affineAcross(corev1.LabelHostname, "anchor", nil, &metav1.LabelSelector{}))},
		want:  "together",
	}, {
		name:  "affinity toward a namespace the anchor is not in",
		batch: []*corev1.Pod{anchor(), follower(affineAcross(corev1.LabelHostname, "anchor", nil, teamC))},
		want:  "stranded",
	}, {
		name:  "affinity without namespaces: the follower's own namespace only",
		batch: []*corev1.Pod{anchor(), follower(affineAcross(corev1.LabelHostname, "anchor", nil, nil))},
		want:  "stranded",
	}, {
		name:  "anti-affinity by namespace selector",
		batch: []*corev1.Pod{anchor(), follower(antiAffineAcross(corev1.LabelHostname, "anchor", nil, teamB))},
		want:  "apart",
	}, {
		name: "the anchor's anti-affinity by namespace selector keeps the follower away",
		batch: []*corev1.Pod{
			anchor(antiAffineAcross(corev1.LabelHostname, "follower", nil, &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}})),
			follower(func(*corev1.Pod) {}),
		},
		want: "apart",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := planAndVerify(t, &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default")}}, namespaces, tc.batch)
			got := "stranded"
			if _, ok := plan.Unschedulable["uid-follower"]; !ok {
				got = "apart"
				if claimOfPod(plan, "uid-anchor") == claimOfPod(plan, "uid-follower") {
					got = "together"
				}
			}
			if got != tc.want {
				t.Errorf("anchor and follower %s, want %s; %d nodeclaims, unschedulable %v", got, tc.want, len(plan.NewNodeClaims), plan.Unschedulable)
			}
			if _, ok := plan.Unschedulable["uid-anchor"]; ok {
				t.Errorf("anchor unschedulable: %v", plan.Unschedulable)
			}
		})
	}
}

// claimOfPod is the index of the new NodeClaim pod uid is planned onto, or -1.
func claimOfPod(plan *simulation.Plan, uid string) int {
	for i, c := range plan.NewNodeClaims {
		for _, p := range c.Pods {
			if string(p.UID) == uid {
				return i
			}
		}
	}
	return -1
}
