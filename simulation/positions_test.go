package simulation

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// Removals and restores leave the positions of the nodes after them to be reindexed when one
// is asked for (Snapshot.position): over random removals, pods added to any node (which
// writes to its position), forks, reverts and commits, the list keeps the order a model of
// it has, and every node's pods are where they were put.
func TestNodePositionsFollowRemovalsAndReverts(t *testing.T) {
	for _, seed := range []uint64{0, 1, 2} {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 5))
			var nodes []*corev1.Node
			for i := range 40 {
				nodes = append(nodes, testNode(fmt.Sprintf("n%02d", i), "64", "256Gi"))
			}
			s, err := NewSnapshot(nodes, nil)
			if err != nil {
				t.Fatal(err)
			}
			type layer struct {
				names []string
				pods  map[string][]string
			}
			clonePods := func(m map[string][]string) map[string][]string {
				out := map[string][]string{}
				for k, v := range m {
					out[k] = slices.Clone(v)
				}
				return out
			}
			model := []layer{{names: s.NodeNames(), pods: map[string][]string{}}}
			check := func(when string) {
				t.Helper()
				top := model[len(model)-1]
				if got := s.NodeNames(); !slices.Equal(got, top.names) {
					t.Fatalf("%s: nodes %v, want %v", when, got, top.names)
				}
				want := map[string][]string{}
				for _, name := range top.names {
					want[name] = append([]string{}, top.pods[name]...)
				}
				if got := podNames(s); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("%s: pods %v, want %v", when, got, want)
				}
			}
			for step := range 200 {
				top := model[len(model)-1]
				switch op := rng.IntN(10); {
				case op < 2 && len(model) < 4:
					s.Fork()
					model = append(model, layer{names: slices.Clone(top.names), pods: clonePods(top.pods)})
				case op < 3 && len(model) > 1:
					must(t, s.Revert())
					model = model[:len(model)-1]
				case op < 4 && len(model) > 1:
					must(t, s.Commit())
					model = append(model[:len(model)-2], top)
				case op < 7 && len(top.names) > 5:
					name := top.names[rng.IntN(len(top.names))]
					must(t, s.RemoveNode(name))
					top.names = slices.DeleteFunc(top.names, func(n string) bool { return n == name })
					delete(top.pods, name)
					model[len(model)-1] = top
				default:
					name := top.names[rng.IntN(len(top.names))]
					pod := testPod(fmt.Sprintf("p%d", step), "10m", "10Mi")
					must(t, s.AddPod(pod, name))
					top.pods[name] = append(top.pods[name], pod.Name)
					model[len(model)-1] = top
				}
				check(fmt.Sprintf("step %d", step))
			}
		})
	}
}
