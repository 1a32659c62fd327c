package simulation

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// The engine reads PodTopologySpread's state by reflection; if a Kubernetes update renames
// its fields, this fails instead of the engine silently falling back to slower paths.
func TestReadSpreadReadsThePluginState(t *testing.T) {
	nodes := []*corev1.Node{testNode("a", "8", "16Gi", inZone("z1")), testNode("b", "8", "16Gi", inZone("z2"))}
	pods := []*corev1.Pod{
		testPod("s-1", "100m", "100Mi", labelled("app", "s"), onNode("a")),
		testPod("s-2", "100m", "100Mi", labelled("app", "s"), onNode("a")),
	}
	e := newTestEngine(t, nodes, pods, nil, nil)
	pod := testPod("s-3", "100m", "100Mi", labelled("app", "s"), spread(zoneLabel, "s"))
	state := framework.NewCycleState()
	if _, status, _ := e.Framework().RunPreFilterPlugins(t.Context(), state, pod); !status.IsSuccess() {
		t.Fatal(status)
	}
	view, ok := readSpread(state, pod)
	if !ok {
		t.Fatal("PodTopologySpread's state could not be read")
	}
	if len(view.constraints) != 1 || view.constraints[0].key != zoneLabel || view.constraints[0].maxSkew != 1 || view.constraints[0].selfMatch != 1 {
		t.Errorf("constraints %+v", view.constraints)
	}
	if got := view.counts[0]; got["z1"] != 2 || got["z2"] != 0 || len(got) != 2 {
		t.Errorf("counts %v, want z1=2 z2=0", got)
	}
	if view.minimums[0] != 0 || view.minDomains[0] != "z2" {
		t.Errorf("minimum %d in %q, want 0 in z2", view.minimums[0], view.minDomains[0])
	}
	// The view's verdict is the plugin's: z1 is two pods ahead.
	for _, name := range []string{"a", "b"} {
		ni, _ := e.Snapshot().Get(name)
		filtered := e.Framework().RunFilterPlugins(t.Context(), state, pod, ni).IsSuccess()
		if view.rejects(ni.Node()) == filtered {
			t.Errorf("node %s: view rejects %v, Filters pass %v", name, view.rejects(ni.Node()), filtered)
		}
	}
}

func TestFirstFitMatchesFitsAny(t *testing.T) {
	nodes := []*corev1.Node{
		testNode("small", "1", "1Gi"), testNode("tainted", "8", "16Gi", withTaint("dedicated", "x")),
		testNode("big-1", "8", "16Gi"), testNode("big-2", "8", "16Gi"),
	}
	e := newTestEngine(t, nodes, nil, nil, nil)
	names := e.Snapshot().NodeNames()
	cases := []struct {
		pod  *corev1.Pod
		want int
	}{
		{testPod("fits-all", "100m", "100Mi"), 0},
		{testPod("needs-big", "2", "2Gi"), 2},
		{testPod("too-big", "64", "1Gi"), -1},
	}
	for _, tc := range cases {
		got, err := e.FirstFit(t.Context(), tc.pod, names, nil)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := e.FitsAny(t.Context(), tc.pod, names)
		if got != tc.want || (got >= 0 && names[got] != name) || (got < 0 && name != "") {
			t.Errorf("%s: FirstFit %d, FitsAny %q, want index %d", tc.pod.Name, got, name, tc.want)
		}
	}
}

// SpreadEpoch holds while the nodes FirstFit marked as rejected by the spread stay rejected,
// and changes once one of them may fit again.
func TestSpreadEpochTracksRejections(t *testing.T) {
	nodes := []*corev1.Node{testNode("a", "8", "16Gi", inZone("z1")), testNode("b", "8", "16Gi", inZone("z1")), testNode("c", "8", "16Gi", inZone("z1"))}
	e := newTestEngine(t, nodes, nil, nil, nil)
	ctx := t.Context()
	mk := func(n string) *corev1.Pod {
		return testPod(n, "100m", "100Mi", labelled("app", "h"), spread(corev1.LabelHostname, "h"))
	}
	schedule(t, e, mk("h-1"), "a")
	schedule(t, e, mk("h-2"), "b")
	names := []string{"a", "b", "c"}
	marks := make([]bool, len(names))
	found, err := e.FirstFit(ctx, mk("probe-1"), names, marks)
	if err != nil || found != 2 || !marks[0] || !marks[1] {
		t.Fatalf("FirstFit = %d, %v, marks %v; want c, a and b rejected by the spread", found, err, marks)
	}
	epoch := e.SpreadEpoch(ctx, mk("probe-1"))
	if epoch == 0 {
		t.Fatal("no epoch for a class with a readable spread")
	}

	// A pod the spread does not count and an empty node: a and b stay rejected.
	schedule(t, e, testPod("other", "100m", "100Mi", labelled("app", "other")), "a")
	must(t, e.Snapshot().AddNode(testNode("d", "8", "16Gi", inZone("z1"))))
	if got := e.SpreadEpoch(ctx, mk("probe-2")); got != epoch {
		t.Fatalf("epoch changed from %d to %d though no rejection can have changed", epoch, got)
	}

	// Every domain but d now holds a pod; once d does too, the minimum rises and a fits.
	schedule(t, e, mk("h-3"), "c")
	schedule(t, e, mk("h-4"), "d")
	if got := e.SpreadEpoch(ctx, mk("probe-3")); got == epoch {
		t.Fatal("the minimum rose but the epoch stayed")
	}
	if found, _ := e.FirstFit(ctx, mk("probe-3"), names, nil); found != 0 {
		t.Fatalf("FirstFit = %d after the minimum rose, want a", found)
	}
}

// FirstFitMarked tells rejections that more pods cannot undo (resources, host ports, required
// anti-affinity) from those they can (pod affinity, taints are neither here).
func TestFirstFitMarkedRejections(t *testing.T) {
	nodes := []*corev1.Node{
		testNode("small", "1", "1Gi", inZone("z1")),
		testNode("anti", "8", "16Gi", inZone("z1")),
		testNode("port", "8", "16Gi", inZone("z1")),
		testNode("tainted", "8", "16Gi", inZone("z1"), withTaint("dedicated", "x")),
		testNode("free", "8", "16Gi", inZone("z1")),
	}
	pods := []*corev1.Pod{
		testPod("db-1", "100m", "100Mi", labelled("app", "db"), onNode("anti")),
		testPod("exporter", "100m", "100Mi", hostPort(9100), onNode("port")),
	}
	e := newTestEngine(t, nodes, pods, nil, nil)
	names := []string{"small", "anti", "port", "tainted", "free"}
	marks := make([]Rejection, len(names))
	pod := testPod("db-2", "2", "1Gi", labelled("app", "db"), antiAffine(corev1.LabelHostname, "db"), hostPort(9100))
	found, err := e.FirstFitMarked(t.Context(), pod, names, marks)
	if err != nil {
		t.Fatal(err)
	}
	want := []Rejection{RejectedForGood, RejectedForGood, RejectedForGood, RejectedOther, RejectedOther}
	if found != 4 || !slices.Equal(marks, want) {
		t.Errorf("FirstFitMarked = %d, marks %v; want 4 (free), marks %v", found, marks, want)
	}
}

// A node rejected for the pod's own required pod affinity is marked RejectedByAffinity: no
// pod the term selects is in its domain; the solver shares that mark by rule.
func TestFirstFitMarkedAffinityRejections(t *testing.T) {
	nodes := []*corev1.Node{
		testNode("lonely", "8", "16Gi", inZone("z1")),
		testNode("small", "1", "1Gi", inZone("z1")),
		testNode("partner", "8", "16Gi", inZone("z1")),
	}
	pods := []*corev1.Pod{
		testPod("db-1", "100m", "100Mi", labelled("app", "db"), onNode("small")),
		testPod("db-2", "100m", "100Mi", labelled("app", "db"), onNode("partner")),
	}
	e := newTestEngine(t, nodes, pods, nil, nil)
	names := []string{"lonely", "small", "partner"}
	marks := make([]Rejection, len(names))
	pod := testPod("web", "2", "1Gi", labelled("app", "web"), affine(corev1.LabelHostname, "db"))
	found, err := e.FirstFitMarked(t.Context(), pod, names, marks)
	if err != nil {
		t.Fatal(err)
	}
	// Only the nodes before the first fit are marked.
	want := []Rejection{RejectedByAffinity, RejectedForGood}
	if found != 2 || !slices.Equal(marks[:found], want) {
		t.Errorf("FirstFitMarked = %d, marks %v; want 2 (partner), marks %v", found, marks, want)
	}
}
