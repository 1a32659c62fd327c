package simulation

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
)

func affine(topologyKey, app string) podOption {
	return func(p *corev1.Pod) {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &corev1.Affinity{}
		}
		p.Spec.Affinity.PodAffinity = &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey:   topologyKey,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			}},
		}
	}
}

// oracleFits runs PreFilter from scratch and the Filters of each node, as kube-scheduler
// would for pod in one scheduling cycle.
func oracleFits(ctx context.Context, t *testing.T, e *Engine, pod *corev1.Pod, nodes []string) []bool {
	t.Helper()
	state := framework.NewCycleState()
	result, status, _ := e.Framework().RunPreFilterPlugins(ctx, state, pod)
	out := make([]bool, len(nodes))
	if !status.IsSuccess() {
		return out
	}
	for i, name := range nodes {
		if !result.AllNodes() && !result.NodeNames.Has(name) {
			continue
		}
		ni, err := e.Snapshot().Get(name)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = e.Framework().RunFilterPlugins(ctx, state, pod, ni).IsSuccess()
	}
	return out
}

func engineFits(ctx context.Context, e *Engine, pod *corev1.Pod, nodes []string) []bool {
	statuses := e.FilterNodes(ctx, pod, nodes)
	out := make([]bool, len(nodes))
	for i, s := range statuses {
		out[i] = s.IsSuccess()
	}
	return out
}

// Each case changes the snapshot after the class's PreFilter state was cached, then checks
// the next pod of the class: a stale state would let it through (or keep it out).
func TestCachedPreFilterFollowsChanges(t *testing.T) {
	zoned := func(name, zone string) *corev1.Node { return testNode(name, "8", "16Gi", inZone(zone)) }
	cases := []struct {
		name  string
		nodes []*corev1.Node
		class func(name string) *corev1.Pod
		// change runs after the class was checked once.
		change func(t *testing.T, e *Engine)
		node   string
		fits   bool
	}{{
		name:  "zone spread: two zones filled, the third is the minimum",
		nodes: []*corev1.Node{zoned("a", "z1"), zoned("b", "z2"), zoned("c", "z3")},
		class: func(n string) *corev1.Pod {
			return testPod(n, "100m", "100Mi", labelled("app", "s"), spread(zoneLabel, "s"))
		},
		change: func(t *testing.T, e *Engine) {
			schedule(t, e, testPod("s-1", "100m", "100Mi", labelled("app", "s"), spread(zoneLabel, "s")), "a")
			schedule(t, e, testPod("s-2", "100m", "100Mi", labelled("app", "s"), spread(zoneLabel, "s")), "b")
		},
		node: "a",
		fits: false,
	}, {
		name:  "hostname anti-affinity to its own class",
		nodes: []*corev1.Node{zoned("a", "z1"), zoned("b", "z1")},
		class: func(n string) *corev1.Pod {
			return testPod(n, "100m", "100Mi", labelled("app", "nginx"), antiAffine(corev1.LabelHostname, "nginx"))
		},
		change: func(t *testing.T, e *Engine) {
			schedule(t, e, testPod("nginx-1", "100m", "100Mi", labelled("app", "nginx"), antiAffine(corev1.LabelHostname, "nginx")), "a")
		},
		node: "a",
		fits: false,
	}, {
		name:  "zone affinity follows the first pod",
		nodes: []*corev1.Node{zoned("a", "z1"), zoned("b", "z2")},
		class: func(n string) *corev1.Pod {
			return testPod(n, "100m", "100Mi", labelled("app", "db"), affine(zoneLabel, "db"))
		},
		change: func(t *testing.T, e *Engine) {
			schedule(t, e, testPod("db-1", "100m", "100Mi", labelled("app", "db"), affine(zoneLabel, "db")), "a")
		},
		node: "b",
		fits: false,
	}, {
		name:  "a reverted placement is forgotten",
		nodes: []*corev1.Node{zoned("a", "z1"), zoned("b", "z1")},
		class: func(n string) *corev1.Pod {
			return testPod(n, "100m", "100Mi", labelled("app", "nginx"), antiAffine(corev1.LabelHostname, "nginx"))
		},
		change: func(t *testing.T, e *Engine) {
			e.Fork()
			schedule(t, e, testPod("nginx-1", "100m", "100Mi", labelled("app", "nginx"), antiAffine(corev1.LabelHostname, "nginx")), "a")
			if e.CheckPredicates(t.Context(), testPod("nginx-probe", "100m", "100Mi", labelled("app", "nginx"), antiAffine(corev1.LabelHostname, "nginx")), "a").IsSuccess() {
				t.Fatal("inside the fork the placed pod is not seen")
			}
			must(t, e.Revert())
		},
		node: "a",
		fits: true,
	}, {
		name:  "an empty node is a domain with zero pods",
		nodes: []*corev1.Node{zoned("a", "z1")},
		class: func(n string) *corev1.Pod {
			return testPod(n, "100m", "100Mi", labelled("app", "h"), spread(corev1.LabelHostname, "h"))
		},
		change: func(t *testing.T, e *Engine) {
			schedule(t, e, testPod("h-1", "100m", "100Mi", labelled("app", "h"), spread(corev1.LabelHostname, "h")), "a")
			// The class's state counts h-1 before the node is added, so only the new node
			// is left to replay.
			if !e.CheckPredicates(t.Context(), testPod("h-probe", "100m", "100Mi", labelled("app", "h"), spread(corev1.LabelHostname, "h")), "a").IsSuccess() {
				t.Fatal("with a single node the spread cannot be skewed")
			}
			must(t, e.Snapshot().AddNode(zoned("b", "z1")))
		},
		node: "a",
		fits: false,
	}, {
		name:  "a node leaving its zone takes the domain with it",
		nodes: []*corev1.Node{zoned("a", "z1"), zoned("x", "z2")},
		class: func(n string) *corev1.Pod {
			return testPod(n, "100m", "100Mi", labelled("app", "s"), spread(zoneLabel, "s"))
		},
		change: func(t *testing.T, e *Engine) {
			schedule(t, e, testPod("s-1", "100m", "100Mi", labelled("app", "s"), spread(zoneLabel, "s")), "a")
			e.CheckPredicates(t.Context(), testPod("s-probe", "100m", "100Mi", labelled("app", "s"), spread(zoneLabel, "s")), "a")
			must(t, e.Snapshot().ReplaceNode(zoned("x", "z1")))
		},
		node: "a",
		fits: true,
	}, {
		name:  "a plugin left stale below a fork is rerun once, after the fork's changes",
		nodes: []*corev1.Node{zoned("a", "z1"), zoned("b", "z2")},
		class: func(n string) *corev1.Pod {
			return testPod(n, "100m", "100Mi", labelled("app", "s"), spread(zoneLabel, "s"))
		},
		change: func(t *testing.T, e *Engine) {
			first := testPod("s-1", "100m", "100Mi", labelled("app", "s"), spread(zoneLabel, "s"))
			schedule(t, e, first, "a")
			e.CheckPredicates(t.Context(), testPod("s-probe", "100m", "100Mi", labelled("app", "s"), spread(zoneLabel, "s")), "a")
			// A node inside the spread relabelled: the plugin is stale for the class.
			must(t, e.Snapshot().ReplaceNode(testNode("b", "8", "16Gi", inZone("z2"), withLabel("rack", "r1"))))
			e.Fork()
			must(t, e.Snapshot().RemovePod(first, "a"))
		},
		node: "b",
		fits: true,
	}, {
		name:  "a pod without terms meets a new pod's anti-affinity",
		nodes: []*corev1.Node{zoned("a", "z1"), zoned("b", "z1")},
		class: func(n string) *corev1.Pod { return testPod(n, "100m", "100Mi", labelled("app", "web")) },
		change: func(t *testing.T, e *Engine) {
			schedule(t, e, testPod("guard", "100m", "100Mi", labelled("app", "guard"), antiAffine(corev1.LabelHostname, "web")), "a")
		},
		node: "a",
		fits: false,
	}, {
		name:  "a relabelled node moves its pods to the new zone",
		nodes: []*corev1.Node{testNode("open", "8", "16Gi"), zoned("b", "z2")},
		class: func(n string) *corev1.Pod {
			return testPod(n, "100m", "100Mi", labelled("app", "db"), affine(zoneLabel, "db"))
		},
		change: func(t *testing.T, e *Engine) {
			must(t, e.Snapshot().AddPod(testPod("db-1", "100m", "100Mi", labelled("app", "db")), "open"))
			e.CheckPredicates(t.Context(), testPod("db-probe", "100m", "100Mi", labelled("app", "db"), affine(zoneLabel, "db")), "b")
			must(t, e.Snapshot().ReplaceNode(zoned("open", "z1")))
		},
		node: "b",
		fits: false,
	}, {
		name:  "a relabelled node keeps its hostname but enters the pod's node affinity",
		nodes: []*corev1.Node{zoned("a", "z1"), zoned("b", "z2")},
		class: func(n string) *corev1.Pod {
			return testPod(n, "100m", "100Mi", labelled("app", "hs"), spread(corev1.LabelHostname, "hs"), requiringZone("z1"))
		},
		change: func(t *testing.T, e *Engine) {
			// b is outside the class's domains (node affinity) while it is in z2.
			must(t, e.Snapshot().AddPod(testPod("hs-1", "100m", "100Mi", labelled("app", "hs")), "b"))
			e.CheckPredicates(t.Context(), testPod("hs-probe", "100m", "100Mi", labelled("app", "hs"), spread(corev1.LabelHostname, "hs"), requiringZone("z1")), "a")
			must(t, e.Snapshot().ReplaceNode(zoned("b", "z1")))
		},
		node: "b",
		fits: false,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEngine(t, tc.nodes, nil, nil, nil)
			ctx := t.Context()
			names := e.Snapshot().NodeNames()
			// Cache the class's state before the change.
			engineFits(ctx, e, tc.class("first"), names)
			tc.change(t, e)
			next := tc.class("next")
			if got := e.CheckPredicates(ctx, next, tc.node).IsSuccess(); got != tc.fits {
				t.Errorf("next pod of the class on %s: fits %v, want %v", tc.node, got, tc.fits)
			}
			if got, want := engineFits(ctx, e, next, names), oracleFits(ctx, t, e, next, names); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("cached PreFilter %v, fresh PreFilter %v on %v", got, want, names)
			}
		})
	}
}

func nodeLabels(t *testing.T, e *Engine, name string) string {
	t.Helper()
	ni, err := e.Snapshot().Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(ni.Node().Labels)
}

func schedule(t *testing.T, e *Engine, pod *corev1.Pod, node string) {
	t.Helper()
	if status := e.SchedulePod(t.Context(), pod, node); !status.IsSuccess() {
		t.Fatalf("scheduling %s on %s: %v", pod.Name, node, status)
	}
}

// Random changes, forks, commits and reverts; after each, some classes are checked on every
// node against a PreFilter run from scratch.
func TestCachedPreFilterMatchesFreshPreFilter(t *testing.T) {
	// Seeds 21 and 25 revert a fork onto a state checkpointed while a plugin was stale.
	for _, seed := range []uint64{0, 1, 2, 3, 4, 5, 21, 25} {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			zones := []string{"z1", "z2", "z3"}
			var nodes []*corev1.Node
			for i := range 4 {
				nodes = append(nodes, testNode(fmt.Sprintf("n%d", i), "64", "256Gi", inZone(zones[i%3])))
			}
			nodes = append(nodes, testNode("open", "64", "256Gi"))
			e := newTestEngine(t, nodes, nil, nil, nil)
			ctx := t.Context()
			classes := []func(string) *corev1.Pod{
				func(n string) *corev1.Pod { return testPod(n, "100m", "100Mi", labelled("app", "plain")) },
				func(n string) *corev1.Pod {
					return testPod(n, "100m", "100Mi", labelled("app", "zs"), spread(zoneLabel, "zs"))
				},
				func(n string) *corev1.Pod {
					return testPod(n, "100m", "100Mi", labelled("app", "hs"), spread(corev1.LabelHostname, "hs"))
				},
				func(n string) *corev1.Pod {
					return testPod(n, "100m", "100Mi", labelled("app", "za"), affine(zoneLabel, "za"))
				},
				func(n string) *corev1.Pod {
					return testPod(n, "100m", "100Mi", labelled("app", "nginx"), antiAffine(corev1.LabelHostname, "nginx"))
				},
				func(n string) *corev1.Pod {
					return testPod(n, "100m", "100Mi", labelled("app", "zanti"), antiAffine(zoneLabel, "plain"))
				},
				// Counts another class's pods, not its own, on two zones only.
				func(n string) *corev1.Pod {
					return testPod(n, "100m", "100Mi", labelled("app", "zs2"), spread(zoneLabel, "zs"), requiringZone("z1", "z2"))
				},
				// Another namespace, two constraints, one with minDomains.
				func(n string) *corev1.Pod {
					p := testPod(n, "100m", "100Mi", labelled("app", "zs"), spread(zoneLabel, "zs"), spread(corev1.LabelHostname, "zs"))
					p.Namespace = "other"
					p.Spec.TopologySpreadConstraints[0].MinDomains = new(int32(4))
					return p
				},
				// Classes of their own that share constraints with the ones above, so
				// their PreFilter states are copied from those (sharedPreFilter, borrow):
				// the zone spread with another size and an extra label, the anti-affinity
				// with another size, the spread counting "zs" with matchLabelKeys.
				func(n string) *corev1.Pod {
					return testPod(n, "200m", "100Mi", labelled("app", "zs"), labelled("tier", "b"), spread(zoneLabel, "zs"))
				},
				func(n string) *corev1.Pod {
					return testPod(n, "300m", "100Mi", labelled("app", "nginx"), antiAffine(corev1.LabelHostname, "nginx"))
				},
				func(n string) *corev1.Pod {
					p := testPod(n, "100m", "200Mi", labelled("app", "zs"), labelled("tier", "b"), spread(zoneLabel, "zs"))
					p.Spec.TopologySpreadConstraints[0].MatchLabelKeys = []string{"tier"}
					return p
				},
			}
			type placed struct {
				pod  *corev1.Pod
				node string
			}
			type mark struct {
				epoch  uint64
				labels string
			}
			rejected := make([]map[string]mark, len(classes))
			for i := range rejected {
				rejected[i] = map[string]mark{}
			}
			// layers[d] are the pods placed at fork depth d or below, as the snapshot
			// holds them at that depth.
			layers := [][]placed{nil}
			seq := 0
			for step := range 400 {
				names := e.Snapshot().NodeNames()
				seq++
				pod := classes[rng.IntN(len(classes))](fmt.Sprintf("p%d", seq))
				node := names[rng.IntN(len(names))]
				top := len(layers) - 1
				switch op := rng.IntN(10); {
				case op < 4:
					if e.SchedulePod(ctx, pod, node).IsSuccess() {
						layers[top] = append(layers[top], placed{pod, node})
					}
				case op == 4:
					must(t, e.Snapshot().AddPod(pod, node))
					layers[top] = append(layers[top], placed{pod, node})
				case op == 5 && len(layers[top]) > 0:
					i := rng.IntN(len(layers[top]))
					gone := layers[top][i]
					must(t, e.Snapshot().RemovePod(gone.pod, gone.node))
					layers[top] = append(slices.Clone(layers[top][:i]), layers[top][i+1:]...)
				case op == 6:
					must(t, e.Snapshot().AddNode(testNode(fmt.Sprintf("new%d", seq), "64", "256Gi", inZone(zones[rng.IntN(3)]))))
				case op == 7 && top < 3:
					e.Fork()
					layers = append(layers, slices.Clone(layers[top]))
				case op == 8 && top > 0:
					if rng.IntN(2) == 0 {
						must(t, e.Revert())
					} else {
						must(t, e.Commit())
						layers[top-1] = layers[top]
					}
					layers = layers[:top]
				case op == 9:
					must(t, e.Snapshot().ReplaceNode(testNode("open", "64", "256Gi", inZone(zones[rng.IntN(3)]))))
				}
				names = e.Snapshot().NodeNames()
				for i, class := range classes {
					if rng.IntN(3) != 0 {
						continue
					}
					probe := class(fmt.Sprintf("probe-%d-%d", step, i))
					got, want := engineFits(ctx, e, probe, names), oracleFits(ctx, t, e, probe, names)
					// Nodes FirstFit marked as rejected by the spread stay rejected while
					// the epoch and their labels are unchanged.
					epoch := e.SpreadEpoch(ctx, probe)
					for j, name := range names {
						if m, ok := rejected[i][name]; ok && m.epoch == epoch && epoch != 0 && m.labels == nodeLabels(t, e, name) && want[j] {
							t.Fatalf("step %d, class %d: node %s was marked rejected at epoch %d and fits now", step, i, name, epoch)
						}
					}
					marks := make([]bool, len(names))
					if _, err := e.FirstFit(ctx, probe, names, marks); err != nil {
						t.Fatal(err)
					}
					for j, marked := range marks {
						if marked {
							rejected[i][names[j]] = mark{epoch, nodeLabels(t, e, names[j])}
						}
					}
					if fmt.Sprint(got) != fmt.Sprint(want) {
						t.Fatalf("step %d, class %d: cached PreFilter %v, fresh PreFilter %v on %v", step, i, got, want, names)
					}
				}
			}
			for _, plugin := range []string{names.PodTopologySpread, names.InterPodAffinity} {
				if e.stats.shared[plugin] == 0 {
					t.Errorf("no class copied %s's state from another: sharing untested", plugin)
				}
			}
		})
	}
}

// Consolidation's pattern: a loaded cluster, forks that remove nodes with their pods, probes
// of every class against a fresh PreFilter inside the fork and after the revert. Removing a
// node is followed with the plugins' RemovePod (and their AddPod when reverted), and
// PodTopologySpread, whose domain may go with the node, is recomputed (or copied).
func TestCachedPreFilterFollowsNodeRemoval(t *testing.T) {
	for _, seed := range []uint64{0, 1, 2, 3} {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 9))
			zones := []string{"z1", "z2", "z3"}
			classes := []func(string) *corev1.Pod{
				func(n string) *corev1.Pod { return testPod(n, "100m", "100Mi", labelled("app", "plain")) },
				func(n string) *corev1.Pod {
					return testPod(n, "100m", "100Mi", labelled("app", "zs"), spread(zoneLabel, "zs"))
				},
				func(n string) *corev1.Pod {
					return testPod(n, "200m", "100Mi", labelled("app", "hs"), spread(corev1.LabelHostname, "hs"))
				},
				func(n string) *corev1.Pod {
					return testPod(n, "100m", "100Mi", labelled("app", "za"), affine(zoneLabel, "za"))
				},
				func(n string) *corev1.Pod {
					return testPod(n, "100m", "100Mi", labelled("app", "nginx"), antiAffine(corev1.LabelHostname, "nginx"))
				},
				func(n string) *corev1.Pod {
					return testPod(n, "300m", "100Mi", labelled("app", "nginx"), antiAffine(corev1.LabelHostname, "nginx"))
				},
				func(n string) *corev1.Pod {
					return testPod(n, "100m", "100Mi", labelled("app", "zanti"), antiAffine(zoneLabel, "plain"))
				},
				func(n string) *corev1.Pod {
					return testPod(n, "100m", "100Mi", labelled("app", "other"), spread(zoneLabel, "zs"))
				},
			}
			var nodes []*corev1.Node
			var pods []*corev1.Pod
			for i := range 9 {
				name := fmt.Sprintf("n%d", i)
				nodes = append(nodes, testNode(name, "64", "256Gi", inZone(zones[i%3])))
				for j := range rng.IntN(4) {
					pod := classes[rng.IntN(len(classes))](fmt.Sprintf("bound-%d-%d", i, j))
					pod.Spec.NodeName = name
					pods = append(pods, pod)
				}
			}
			e := newTestEngine(t, nodes, pods, nil, nil)
			ctx := t.Context()
			// Classes seen only inside forks, as consolidation's plans see them: their
			// states are computed in the first and rolled back with it (forkSteps).
			late := []func(string) *corev1.Pod{
				func(n string) *corev1.Pod {
					return testPod(n, "400m", "100Mi", labelled("app", "late"), antiAffine(zoneLabel, "nginx"))
				},
				func(n string) *corev1.Pod {
					return testPod(n, "400m", "100Mi", labelled("app", "zs"), spread(zoneLabel, "zs"), affine(zoneLabel, "za"))
				},
				func(n string) *corev1.Pod {
					return testPod(n, "400m", "100Mi", labelled("app", "plain"), antiAffine(corev1.LabelHostname, "hs"))
				},
			}
			probe := func(when string, step int) {
				t.Helper()
				names := e.Snapshot().NodeNames()
				probed := classes
				if step > 0 && when == "in the fork" {
					probed = append(slices.Clone(classes), late...)
				}
				for i, class := range probed {
					p := class(fmt.Sprintf("probe-%d-%d", step, i))
					if got, want := engineFits(ctx, e, p, names), oracleFits(ctx, t, e, p, names); fmt.Sprint(got) != fmt.Sprint(want) {
						t.Fatalf("step %d %s, class %d: cached PreFilter %v, fresh PreFilter %v on %v", step, when, i, got, want, names)
					}
				}
			}
			probe("loaded", 0)
			for step := 1; step <= 30; step++ {
				e.Fork()
				left := e.Snapshot().NodeNames()
				for range 1 + rng.IntN(3) {
					if len(left) > 3 {
						must(t, e.Snapshot().RemoveNode(left[rng.IntN(len(left))]))
						left = e.Snapshot().NodeNames()
					}
				}
				// A plan in the fork places some pods on what is left.
				for i := range rng.IntN(3) {
					pod := classes[rng.IntN(len(classes))](fmt.Sprintf("moved-%d-%d", step, i))
					e.SchedulePod(ctx, pod, left[rng.IntN(len(left))])
				}
				probe("in the fork", step)
				if rng.IntN(4) == 0 {
					must(t, e.Commit())
				} else {
					must(t, e.Revert())
				}
				probe("after the fork", step)
			}
			if e.stats.ran[names.InterPodAffinity] > len(classes)+len(late)+2 {
				t.Errorf("InterPodAffinity's PreFilter ran %d times for %d classes: removals are not followed", e.stats.ran[names.InterPodAffinity], len(classes))
			}
		})
	}
}

func describe(s *fwk.Status) string {
	if s == nil {
		return "success"
	}
	return fmt.Sprint(s.Code(), s.Reasons(), s.Plugin())
}

// The engine runs the PreFilter plugins itself (so that a class can copy a plugin's state);
// it must answer what the framework's RunPreFilterPlugins answers: status, node list and
// skipped plugins.
func TestRunPreFilterAnswersAsTheFramework(t *testing.T) {
	onNodes := func(names ...string) podOption {
		return func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: names}},
				}}},
			}}
		}
	}
	pods := []*corev1.Pod{
		testPod("plain", "100m", "100Mi", labelled("app", "plain")),
		testPod("spread", "100m", "100Mi", labelled("app", "s"), spread(zoneLabel, "s")),
		testPod("anti", "100m", "100Mi", labelled("app", "nginx"), antiAffine(corev1.LabelHostname, "nginx")),
		testPod("zoned", "100m", "100Mi", requiringZone("z2")),
		testPod("named", "100m", "100Mi", onNodes("a")),
		testPod("nowhere", "100m", "100Mi", onNodes("missing")),
		testPod("ports", "100m", "100Mi", hostPort(8080)),
	}
	nodes := []*corev1.Node{testNode("a", "8", "16Gi", inZone("z1")), testNode("b", "8", "16Gi", inZone("z2"))}
	bound := []*corev1.Pod{testPod("guard", "100m", "100Mi", labelled("app", "guard"), antiAffine(corev1.LabelHostname, "plain"), onNode("a"))}
	e := newTestEngine(t, nodes, bound, nil, nil)
	ctx := t.Context()
	for _, pod := range pods {
		t.Run(pod.Name, func(t *testing.T) {
			state := framework.NewCycleState()
			result, status, withNodes := e.Framework().RunPreFilterPlugins(ctx, state, pod)
			cs := e.preFilter(ctx, pod)
			if got, want := describe(cs.status), describe(status); got != want {
				t.Errorf("status %s, framework %s", got, want)
			}
			if got, want := fmt.Sprint(cs.result), fmt.Sprint(result); got != want {
				t.Errorf("result %s, framework %s", got, want)
			}
			if got, want := fmt.Sprint(cs.pluginsWithNodes), fmt.Sprint(sortedList(withNodes)); got != want {
				t.Errorf("plugins with nodes %s, framework %s", got, want)
			}
			if got, want := fmt.Sprint(sortedList(cs.state.GetSkipFilterPlugins())), fmt.Sprint(sortedList(state.GetSkipFilterPlugins())); got != want {
				t.Errorf("skipped %s, framework %s", got, want)
			}
		})
	}
}

// Classes whose spread constraint and anti-affinity are the same (pods of other sizes, so
// other classes) hold one PreFilter state per plugin, not copies: each plugin's PreFilter
// runs once, pods added afterwards are replayed by the one class that owns the state, and
// every class still answers as a fresh PreFilter would, across a fork and its revert.
func TestSharedPreFilterStateIsComputedOnce(t *testing.T) {
	ctx := t.Context()
	var nodes []*corev1.Node
	for i, zone := range []string{"z1", "z2", "z3", "z1", "z2", "z3"} {
		nodes = append(nodes, testNode(fmt.Sprintf("n%d", i), "64", "256Gi", inZone(zone)))
	}
	e := newTestEngine(t, nodes, nil, nil, nil)
	classes := []func(string) *corev1.Pod{}
	for _, cpu := range []string{"100m", "200m", "300m"} {
		classes = append(classes, func(name string) *corev1.Pod {
			return testPod(name, cpu, "100Mi", labelled("app", "web"), spread(zoneLabel, "web"), antiAffine(corev1.LabelHostname, "web"))
		})
	}
	// linkedTo reports whether every class holds the first class's own objects.
	linkedTo := func(plugin string) bool {
		first := e.classes[e.classKey(classes[0]("probe-0"))]
		for i := range classes {
			probe := classes[i](fmt.Sprintf("probe-%d", i))
			e.preFilter(ctx, probe)
			cs := e.classes[e.classKey(probe)]
			mine, err := cs.state.Read(stateKeyOf(plugin))
			if err != nil || first == nil {
				return false
			}
			theirs, err := first.state.Read(stateKeyOf(plugin))
			if err != nil || mine != theirs {
				return false
			}
		}
		return true
	}
	check := func(step string) {
		t.Helper()
		names := e.Snapshot().NodeNames()
		for i, class := range classes {
			probe := class(fmt.Sprintf("probe-%s-%d", step, i))
			if got, want := engineFits(ctx, e, probe, names), oracleFits(ctx, t, e, probe, names); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%s, class %d: cached PreFilter %v, fresh PreFilter %v on %v", step, i, got, want, names)
			}
		}
	}
	check("start")
	for _, plugin := range []string{names.PodTopologySpread, names.InterPodAffinity} {
		if ran := e.stats.ran[plugin]; ran != 1 {
			t.Errorf("%s's PreFilter ran %d times for %d classes sharing its constraints, want 1", plugin, ran, len(classes))
		}
		if !linkedTo(plugin) {
			t.Errorf("the classes hold copies of %s's state, not the one state", plugin)
		}
	}
	// Pods of every class land one per node: the anti-affinity keeps them apart, and the
	// spread's minimum moves with each zone filled.
	for i, node := range e.Snapshot().NodeNames() {
		pod := classes[i%len(classes)](fmt.Sprintf("placed-%d", i))
		if !e.SchedulePod(ctx, pod, node).IsSuccess() {
			t.Fatalf("placing %s on %s was rejected", pod.Name, node)
		}
		check(fmt.Sprintf("after %s", pod.Name))
		if i == 2 {
			e.Fork()
		}
	}
	must(t, e.Revert())
	check("after the revert")
	if ran := e.stats.ran[names.InterPodAffinity]; ran != 1 {
		t.Errorf("InterPodAffinity's PreFilter ran %d times: the one state was not followed incrementally", ran)
	}
	if !linkedTo(names.InterPodAffinity) || !linkedTo(names.PodTopologySpread) {
		t.Error("after the changes, the classes hold copies of the state, not the one state")
	}
}
