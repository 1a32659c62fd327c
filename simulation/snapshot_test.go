package simulation

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// snapshotState is everything a plugin can observe through the lister, for comparisons.
type snapshotState struct {
	nodes        []string
	pods         map[string][]string
	requestedCPU map[string]int64
	affinity     []string
	antiAffinity []string
	pvcUsed      map[string]bool
	generation   uint64
}

func observe(s *Snapshot, claims ...string) snapshotState {
	st := snapshotState{pods: podNames(s), requestedCPU: map[string]int64{}, pvcUsed: map[string]bool{}, generation: s.Generation()}
	list, _ := s.List()
	for _, ni := range list {
		st.nodes = append(st.nodes, ni.Node().Name)
		st.requestedCPU[ni.Node().Name] = ni.GetRequested().GetMilliCPU()
		if got, err := s.Get(ni.Node().Name); err != nil || got != ni {
			panic("Get disagrees with List for " + ni.Node().Name)
		}
	}
	withAffinity, _ := s.HavePodsWithAffinityList()
	for _, ni := range withAffinity {
		st.affinity = append(st.affinity, ni.Node().Name)
	}
	withAnti, _ := s.HavePodsWithRequiredAntiAffinityList()
	for _, ni := range withAnti {
		st.antiAffinity = append(st.antiAffinity, ni.Node().Name)
	}
	for _, claim := range claims {
		st.pvcUsed[claim] = s.IsPVCUsedByPods(claim)
	}
	return st
}

func baseSnapshot(t *testing.T) *Snapshot {
	t.Helper()
	s, err := NewSnapshot(
		[]*corev1.Node{testNode("real-1", "4", "8Gi"), testNode("real-2", "4", "8Gi"), testNode("real-3", "4", "8Gi")},
		[]*corev1.Pod{
			testPod("a", "100m", "64Mi", onNode("real-1"), withClaim("data-a")),
			testPod("b", "200m", "64Mi", onNode("real-2"), labelled("app", "x"), antiAffine(corev1.LabelHostname, "x")),
			testPod("pending", "200m", "64Mi"),
			testPod("elsewhere", "200m", "64Mi", onNode("not-in-snapshot")),
			func() *corev1.Pod {
				p := testPod("done", "200m", "64Mi", onNode("real-3"))
				p.Status.Phase = corev1.PodSucceeded
				return p
			}(),
		})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNewSnapshotKeepsAssignedRunningPods(t *testing.T) {
	s := baseSnapshot(t)
	want := map[string][]string{"real-1": {"a"}, "real-2": {"b"}, "real-3": {}}
	if got := podNames(s); !reflect.DeepEqual(got, want) {
		t.Fatalf("pods = %v, want %v", got, want)
	}
	if !s.IsPVCUsedByPods("default/data-a") || s.IsPVCUsedByPods("default/data-b") {
		t.Fatal("PVC usage not tracked")
	}
}

func TestForkRevertRestoresExactly(t *testing.T) {
	claims := []string{"default/data-a", "default/data-new"}
	tests := []struct {
		name   string
		change func(t *testing.T, s *Snapshot)
	}{
		{"add hypothetical node with planned pods", func(t *testing.T, s *Snapshot) {
			must(t, s.AddNode(testNode("new-1", "8", "16Gi")))
			must(t, s.AddPod(testPod("p1", "1", "1Gi", withClaim("data-new")), "new-1"))
			must(t, s.AddPod(testPod("p2", "1", "1Gi", labelled("app", "x"), antiAffine(corev1.LabelHostname, "x")), "new-1"))
		}},
		{"plan pods onto real nodes", func(t *testing.T, s *Snapshot) {
			must(t, s.AddPod(testPod("p1", "1", "1Gi"), "real-1"))
			must(t, s.AddPod(testPod("p2", "1", "1Gi"), "real-1"))
			must(t, s.AddPod(testPod("p3", "500m", "1Gi"), "real-3"))
		}},
		{"remove pods and nodes", func(t *testing.T, s *Snapshot) {
			must(t, s.RemovePod(testPod("a", "100m", "64Mi", onNode("real-1"), withClaim("data-a")), "real-1"))
			must(t, s.RemoveNode("real-2"))
			must(t, s.RemoveNode("real-1"))
		}},
		{"nested forks, inner committed", func(t *testing.T, s *Snapshot) {
			must(t, s.AddNode(testNode("new-1", "8", "16Gi")))
			s.Fork()
			must(t, s.AddPod(testPod("p1", "1", "1Gi"), "new-1"))
			must(t, s.AddPod(testPod("p2", "1", "1Gi"), "real-2"))
			must(t, s.RemoveNode("real-3"))
			must(t, s.Commit())
			must(t, s.AddPod(testPod("p3", "1", "1Gi"), "new-1"))
		}},
		{"nested forks, inner reverted", func(t *testing.T, s *Snapshot) {
			must(t, s.AddPod(testPod("p1", "1", "1Gi"), "real-1"))
			s.Fork()
			must(t, s.AddPod(testPod("p2", "1", "1Gi"), "real-1"))
			must(t, s.AddNode(testNode("new-1", "8", "16Gi")))
			must(t, s.Revert())
			must(t, s.AddNode(testNode("new-1", "8", "16Gi")))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := baseSnapshot(t)
			before := observe(s, claims...)
			s.Fork()
			tt.change(t, s)
			changed := observe(s, claims...)
			if reflect.DeepEqual(before, changed) {
				t.Fatal("the change did not change the snapshot")
			}
			must(t, s.Revert())
			if after := observe(s, claims...); !reflect.DeepEqual(before, after) {
				t.Fatalf("after revert\n got %+v\nwant %+v", after, before)
			}
			if s.Depth() != 0 {
				t.Fatalf("depth %d after revert", s.Depth())
			}

			// The same change committed stays.
			s.Fork()
			tt.change(t, s)
			committed := observe(s, claims...)
			must(t, s.Commit())
			if got := observe(s, claims...); !reflect.DeepEqual(got, committed) {
				t.Fatalf("after commit\n got %+v\nwant %+v", got, committed)
			}
		})
	}
}

// TestForkCopiesOnlyWhatChanges checks that a fork shares the NodeInfos it does not change
// and never changes the ones it shares.
func TestForkCopiesOnlyWhatChanges(t *testing.T) {
	s := baseSnapshot(t)
	real1, _ := s.Get("real-1")
	real2, _ := s.Get("real-2")
	podsOfReal1 := len(real1.GetPods())
	s.Fork()
	must(t, s.AddPod(testPod("p1", "1", "1Gi"), "real-1"))
	must(t, s.AddPod(testPod("p2", "1", "1Gi"), "real-1"))
	if got, _ := s.Get("real-2"); got != real2 {
		t.Error("an unchanged node was copied")
	}
	if got, _ := s.Get("real-1"); got == real1 {
		t.Error("a changed node was changed in place")
	}
	if len(real1.GetPods()) != podsOfReal1 {
		t.Error("the pre-fork NodeInfo was changed")
	}
	// One entry for the copy; the pods go into the copy, which the revert drops as a whole.
	if len(s.journal) != 1 {
		t.Errorf("journal has %d entries, want 1", len(s.journal))
	}
}

func TestGenerationReturnsOnRevert(t *testing.T) {
	s := baseSnapshot(t)
	g0 := s.Generation()
	s.Fork()
	if s.Generation() != g0 {
		t.Fatal("fork changed the generation")
	}
	must(t, s.AddNode(testNode("new-1", "8", "16Gi")))
	g1 := s.Generation()
	if g1 == g0 {
		t.Fatal("a change kept the generation")
	}
	must(t, s.Revert())
	if s.Generation() != g0 {
		t.Fatal("revert did not restore the generation")
	}
	must(t, s.AddNode(testNode("new-2", "8", "16Gi")))
	if g := s.Generation(); g == g0 || g == g1 {
		t.Fatalf("generation %d reused after different changes", g)
	}
}

func TestUndoCallbacks(t *testing.T) {
	s := baseSnapshot(t)
	var undone []string
	record := func(name string) func() { return func() { undone = append(undone, name) } }

	s.OnUndo(record("permanent"))
	s.Fork()
	s.OnUndo(record("kept"))
	s.Fork()
	s.OnUndo(record("reverted-1"))
	s.OnUndo(record("reverted-2"))
	must(t, s.Revert())
	if want := []string{"reverted-2", "reverted-1"}; !slices.Equal(undone, want) {
		t.Fatalf("after revert undone = %v, want %v", undone, want)
	}
	must(t, s.Commit())
	undone = nil
	must(t, s.Reset(nil, nil))
	if want := []string{"kept", "permanent"}; !slices.Equal(undone, want) {
		t.Fatalf("after reset undone = %v, want %v", undone, want)
	}
}

func TestSnapshotErrors(t *testing.T) {
	s := baseSnapshot(t)
	cases := map[string]error{
		"revert without fork": s.Revert(),
		"commit without fork": s.Commit(),
		"duplicate node":      s.AddNode(testNode("real-1", "1", "1Gi")),
		"pod onto unknown":    s.AddPod(testPod("p", "1", "1Gi"), "missing"),
		"pod without UID":     s.AddPod(&corev1.Pod{}, "real-1"),
		"remove unknown pod":  s.RemovePod(testPod("nope", "1", "1Gi"), "real-1"),
		"remove unknown node": s.RemoveNode("missing"),
	}
	for _, name := range slices.Sorted(maps.Keys(cases)) {
		if cases[name] == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
