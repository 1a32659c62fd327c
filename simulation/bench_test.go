package simulation

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// benchCluster is 100 nodes in three zones running 1000 pods: on each node one app=nginx
// pod and nine others of three apps, some with required hostname anti-affinity.
func benchCluster(b *testing.B) (*Engine, []string) {
	b.Helper()
	zones := []string{"zone-a", "zone-b", "zone-c"}
	var nodes []*corev1.Node
	var names []string
	var pods []*corev1.Pod
	for i := range 100 {
		name := fmt.Sprintf("node-%03d", i)
		names = append(names, name)
		nodes = append(nodes, testNode(name, "16", "64Gi", inZone(zones[i%3])))
		pods = append(pods, testPod(fmt.Sprintf("nginx-%d", i), "250m", "256Mi", onNode(name), labelled("app", "nginx")))
		for j := range 9 {
			app := []string{"web", "api", "db"}[j%3]
			opts := []podOption{onNode(name), labelled("app", app)}
			if app == "db" {
				opts = append(opts, antiAffine(corev1.LabelHostname, "db"))
			}
			pods = append(pods, testPod(fmt.Sprintf("%s-%d-%d", app, i, j), "500m", "1Gi", opts...))
		}
	}
	return newTestEngine(b, nodes, pods, nil, nil), names
}

var benchPods = map[string]*corev1.Pod{
	"plain":       testPod("bench", "1", "1Gi"),
	"constrained": testPod("bench", "1", "1Gi", labelled("app", "bench"), spread(zoneLabel, "bench"), antiAffine(corev1.LabelHostname, "bench")),
}

// BenchmarkCheckPredicates measures one node's Filters for a pod whose class's PreFilter
// state is current ("cached"); after a pod of the class was added to the snapshot, so the
// state follows the change through the plugins' PreFilterExtensions ("after-add"); and with
// PreFilter run from scratch, as kube-scheduler runs it once per cycle ("full").
func BenchmarkCheckPredicates(b *testing.B) {
	engine, names := benchCluster(b)
	for _, kind := range []string{"plain", "constrained"} {
		b.Run(kind+"/cached", func(b *testing.B) {
			pod := benchPods[kind]
			for i := 0; b.Loop(); i++ {
				engine.CheckPredicates(b.Context(), pod, names[i%len(names)])
			}
		})
		b.Run(kind+"/after-add", func(b *testing.B) {
			pod := benchPods[kind]
			engine.Fork()
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				added := pod.DeepCopy()
				added.Name, added.UID = fmt.Sprintf("added-%d", i), types.UID(fmt.Sprintf("added-%d", i))
				if err := engine.Snapshot().AddPod(added, names[i%len(names)]); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				engine.CheckPredicates(b.Context(), pod, names[(i+1)%len(names)])
			}
			b.StopTimer()
			if err := engine.Revert(); err != nil {
				b.Fatal(err)
			}
		})
		b.Run(kind+"/full", func(b *testing.B) {
			pod := benchPods[kind]
			for i := 0; b.Loop(); i++ {
				state := framework.NewCycleState()
				if _, status, _ := engine.Framework().RunPreFilterPlugins(b.Context(), state, pod); !status.IsSuccess() {
					b.Fatal(status)
				}
				ni, _ := engine.Snapshot().Get(names[i%len(names)])
				engine.Framework().RunFilterPlugins(b.Context(), state, pod, ni)
			}
		})
	}
}

// BenchmarkFitsAny measures a search over all 100 nodes: "first" fits the first node,
// "none" runs every Filter on every node (anti-affinity against the nginx pod on each node
// is decided by the last Filter, InterPodAffinity).
func BenchmarkFitsAny(b *testing.B) {
	engine, names := benchCluster(b)
	cases := map[string]*corev1.Pod{
		"first": benchPods["constrained"],
		"none":  testPod("bench", "1", "1Gi", labelled("app", "nginx"), antiAffine(corev1.LabelHostname, "nginx")),
	}
	for _, name := range []string{"first", "none"} {
		pod := cases[name]
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				node, _ := engine.FitsAny(b.Context(), pod, names)
				if (node == "") != (name == "none") {
					b.Fatalf("FitsAny = %q", node)
				}
			}
		})
	}
}

// BenchmarkSchedulePodForkRevert measures planning a pod onto a new node inside a fork and
// reverting it, the solver's basic try-and-undo step.
func BenchmarkSchedulePodForkRevert(b *testing.B) {
	engine, _ := benchCluster(b)
	node := testNode("new-1", "16", "64Gi", inZone("zone-a"))
	pod := benchPods["constrained"]
	for b.Loop() {
		engine.Fork()
		if err := engine.Snapshot().AddNode(node); err != nil {
			b.Fatal(err)
		}
		if status := engine.SchedulePod(b.Context(), pod, "new-1"); !status.IsSuccess() {
			b.Fatal(status)
		}
		if err := engine.Revert(); err != nil {
			b.Fatal(err)
		}
	}
}
