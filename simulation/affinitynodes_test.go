package simulation

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
)

func TestRequiredLabels(t *testing.T) {
	for _, tc := range []struct {
		name string
		sel  *metav1.LabelSelector
		want []string
	}{
		{"nil", nil, nil},
		{"empty", &metav1.LabelSelector{}, nil},
		{"matchLabels", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}, []string{"app=a"}},
		{"In", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}}}, []string{"app=a", "app=b"}},
		{"Exists", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpExists}}}, []string{"app"}},
		{"the narrowest requirement", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}},
			{Key: "tier", Operator: metav1.LabelSelectorOpExists}}}, []string{"tier"}},
		{"NotIn and DoesNotExist only", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"a"}},
			{Key: "tier", Operator: metav1.LabelSelectorOpDoesNotExist}}}, nil},
		{"In without values", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpIn}}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := requiredLabels(tc.sel); !slices.Equal(got, tc.want) {
				t.Errorf("requiredLabels = %q, want %q", got, tc.want)
			}
		})
	}
}

// affinityNodeNames is the node list InterPodAffinity's PreFilter gets for pod.
func affinityNodeNames(t *testing.T, e *Engine, pod *corev1.Pod) []string {
	t.Helper()
	all, err := e.Snapshot().List()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(e.preFilterPlugins, func(p preFilterPlugin) bool { return p.name == names.InterPodAffinity })
	var out []string
	for _, ni := range e.preFilterNodes(e.preFilterPlugins[i], pod, all) {
		out = append(out, ni.Node().Name)
	}
	return out
}

// The index is built lazily, possibly inside a fork that removed nodes: a Revert puts them
// back with their pods, which must be in the list again; so must nodes a pod with the label
// lands on afterwards, and a Reset starts over.
func TestAffinityNodesFollowForks(t *testing.T) {
	nodes := []*corev1.Node{
		testNode("n0", "8", "16Gi"), testNode("n1", "8", "16Gi"), testNode("n2", "8", "16Gi"), testNode("n3", "8", "16Gi"),
	}
	pods := []*corev1.Pod{
		testPod("a0", "100m", "100Mi", labelled("app", "a"), onNode("n0")),
		testPod("b1", "100m", "100Mi", labelled("app", "b"), onNode("n1")),
		testPod("a2", "100m", "100Mi", labelled("app", "a"), onNode("n2")),
	}
	e := newTestEngine(t, nodes, pods, nil, nil)
	ctx := t.Context()
	probe := testPod("probe", "100m", "100Mi", labelled("app", "p"), antiAffine(corev1.LabelHostname, "a"))
	check := func(when string, want ...string) {
		t.Helper()
		if got := affinityNodeNames(t, e, probe); !slices.Equal(got, want) {
			t.Errorf("%s: InterPodAffinity gets %v, want %v", when, got, want)
		}
	}

	e.Fork()
	must(t, e.Snapshot().RemoveNode("n0"))
	check("built in a fork without n0", "n2")
	e.SchedulePod(ctx, testPod("a3", "100m", "100Mi", labelled("app", "a")), "n3")
	check("a matching pod placed on n3", "n2", "n3")
	must(t, e.Revert())
	// n0 is back; n3's pod is gone, and listing n3 too is allowed (it adds nothing).
	check("reverted", "n0", "n2", "n3")

	plain := testPod("plain", "100m", "100Mi", labelled("app", "p"))
	if got := affinityNodeNames(t, e, plain); len(got) != len(nodes) {
		t.Errorf("a pod without terms gets %v, want every node", got)
	}
	anyPod := testPod("any", "100m", "100Mi", labelled("app", "p"), antiAffine(corev1.LabelHostname, "a"))
	anyPod.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector =
		&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"b"}}}}
	if got := affinityNodeNames(t, e, anyPod); len(got) != len(nodes) {
		t.Errorf("a term requiring no label gets %v, want every node", got)
	}

	must(t, e.Reset(nodes[1:], []*corev1.Pod{
		testPod("b1", "100m", "100Mi", labelled("app", "b"), onNode("n1")),
		testPod("a3", "100m", "100Mi", labelled("app", "a"), onNode("n3")),
	}))
	check("after a Reset", "n3")
}

// Consolidation's pattern, with the index and with every node scanned: the same Filter
// answers for every class in every fork, over random removals, placements and reverts.
func TestAffinityNodesSameAnswers(t *testing.T) {
	zones := []string{"z1", "z2", "z3"}
	in := func(app ...string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: app}}}
	}
	withTerm := func(anti bool, key string, sel *metav1.LabelSelector) podOption {
		return func(p *corev1.Pod) {
			if p.Spec.Affinity == nil {
				p.Spec.Affinity = &corev1.Affinity{}
			}
			term := corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: sel}
			if anti {
				p.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term}}
			} else {
				p.Spec.Affinity.PodAffinity = &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term}}
			}
		}
	}
	classes := []func(string) *corev1.Pod{
		func(n string) *corev1.Pod { return testPod(n, "100m", "100Mi", labelled("app", "plain")) },
		func(n string) *corev1.Pod {
			return testPod(n, "200m", "100Mi", labelled("app", "g1"), antiAffine(corev1.LabelHostname, "g1"))
		},
		func(n string) *corev1.Pod {
			return testPod(n, "200m", "100Mi", labelled("app", "g2"), antiAffine(corev1.LabelHostname, "g2"))
		},
		func(n string) *corev1.Pod {
			return testPod(n, "100m", "100Mi", labelled("app", "za"), affine(zoneLabel, "za"))
		},
		func(n string) *corev1.Pod {
			return testPod(n, "100m", "100Mi", labelled("app", "in"), withTerm(true, zoneLabel, in("g1", "za")))
		},
		func(n string) *corev1.Pod {
			return testPod(n, "100m", "100Mi", labelled("tier", "t"), withTerm(true, corev1.LabelHostname,
				&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}}}))
		},
		func(n string) *corev1.Pod {
			return testPod(n, "100m", "100Mi", labelled("app", "not"), withTerm(true, corev1.LabelHostname,
				&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"plain", "g1"}}}}))
		},
	}
	for _, seed := range []uint64{0, 1, 2, 3} {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 24))
			var nodes []*corev1.Node
			var pods []*corev1.Pod
			for i := range 12 {
				name := fmt.Sprintf("n%d", i)
				nodes = append(nodes, testNode(name, "64", "256Gi", inZone(zones[i%3])))
				for j := range rng.IntN(4) {
					pod := classes[rng.IntN(len(classes))](fmt.Sprintf("bound-%d-%d", i, j))
					pod.Spec.NodeName = name
					pods = append(pods, pod)
				}
			}
			indexed, full := newTestEngine(t, nodes, pods, nil, nil), newTestEngine(t, nodes, pods, nil, nil)
			full.fullAffinityScan = true
			engines := []*Engine{indexed, full}
			ctx := t.Context()
			for step := range 30 {
				left := indexed.Snapshot().NodeNames()
				var removed []string
				for range 1 + rng.IntN(3) {
					removed = append(removed, left[rng.IntN(len(left))])
				}
				slices.Sort(removed)
				removed = slices.Compact(removed)
				var moved []*corev1.Pod
				for i := range 2 + rng.IntN(4) {
					moved = append(moved, classes[rng.IntN(len(classes))](fmt.Sprintf("moved-%d-%d", step, i)))
				}
				commit := rng.IntN(4) == 0
				var answers [2]string
				for k, e := range engines {
					e.Fork()
					for _, name := range removed {
						must(t, e.Snapshot().RemoveNode(name))
					}
					names := e.Snapshot().NodeNames()
					out := ""
					for _, pod := range moved {
						fits := engineFits(ctx, e, pod, names)
						out += fmt.Sprint(pod.Name, fits, " ")
						if i := slices.Index(fits, true); i >= 0 {
							e.SchedulePod(ctx, pod, names[i])
						}
					}
					answers[k] = out
					if commit {
						must(t, e.Commit())
					} else {
						must(t, e.Revert())
					}
				}
				if answers[0] != answers[1] {
					t.Fatalf("step %d: with the index %s\nscanning every node %s", step, answers[0], answers[1])
				}
				if len(indexed.Snapshot().NodeNames()) < 4 {
					break
				}
			}
		})
	}
}
