package simulation

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

func TestCheckPredicates(t *testing.T) {
	tests := []struct {
		name       string
		nodes      []*corev1.Node
		pods       []*corev1.Pod
		pod        *corev1.Pod
		node       string
		wantPlugin string // "" means the pod fits
		wantReason string
	}{
		{
			name:       "host port taken by a daemonset pod on the new node",
			nodes:      []*corev1.Node{testNode("new-1", "4", "8Gi")},
			pods:       []*corev1.Pod{testPod("agent", "100m", "64Mi", hostPort(9100), ownedByDaemonSet("agent"), onNode("new-1"))},
			pod:        testPod("web", "100m", "64Mi", hostPort(9100)),
			node:       "new-1",
			wantPlugin: "NodePorts",
			wantReason: "didn't have free ports",
		},
		{
			name:  "another host port is free",
			nodes: []*corev1.Node{testNode("new-1", "4", "8Gi")},
			pods:  []*corev1.Pod{testPod("agent", "100m", "64Mi", hostPort(9100), ownedByDaemonSet("agent"), onNode("new-1"))},
			pod:   testPod("web", "100m", "64Mi", hostPort(8080)),
			node:  "new-1",
		},
		{
			name:       "taint not tolerated",
			nodes:      []*corev1.Node{testNode("gpu-1", "4", "8Gi", withTaint("nvidia.com/gpu", "true"))},
			pod:        testPod("web", "100m", "64Mi"),
			node:       "gpu-1",
			wantPlugin: "TaintToleration",
			wantReason: "untolerated taint",
		},
		{
			name:  "taint tolerated",
			nodes: []*corev1.Node{testNode("gpu-1", "4", "8Gi", withTaint("nvidia.com/gpu", "true"))},
			pod:   testPod("web", "100m", "64Mi", tolerating("nvidia.com/gpu")),
			node:  "gpu-1",
		},
		{
			name:       "hostname anti-affinity against a planned pod",
			nodes:      []*corev1.Node{testNode("new-1", "4", "8Gi"), testNode("new-2", "4", "8Gi")},
			pods:       []*corev1.Pod{testPod("nginx-0", "100m", "64Mi", labelled("app", "nginx"), onNode("new-1"))},
			pod:        testPod("nginx-1", "100m", "64Mi", labelled("app", "nginx"), antiAffine(corev1.LabelHostname, "nginx")),
			node:       "new-1",
			wantPlugin: "InterPodAffinity",
			wantReason: "anti-affinity",
		},
		{
			name:  "hostname anti-affinity on an empty node",
			nodes: []*corev1.Node{testNode("new-1", "4", "8Gi"), testNode("new-2", "4", "8Gi")},
			pods:  []*corev1.Pod{testPod("nginx-0", "100m", "64Mi", labelled("app", "nginx"), onNode("new-1"))},
			pod:   testPod("nginx-1", "100m", "64Mi", labelled("app", "nginx"), antiAffine(corev1.LabelHostname, "nginx")),
			node:  "new-2",
		},
		{
			name:       "node affinity mismatch",
			nodes:      []*corev1.Node{testNode("new-1", "4", "8Gi", inZone("zone-a"))},
			pod:        testPod("web", "100m", "64Mi", requiringZone("zone-b", "zone-c")),
			node:       "new-1",
			wantPlugin: "NodeAffinity",
			wantReason: "didn't match Pod's node affinity",
		},
		{
			name:  "node affinity match",
			nodes: []*corev1.Node{testNode("new-1", "4", "8Gi", inZone("zone-b"))},
			pod:   testPod("web", "100m", "64Mi", requiringZone("zone-b", "zone-c")),
			node:  "new-1",
		},
		{
			name:       "cpu exceeded by the pods already planned",
			nodes:      []*corev1.Node{testNode("new-1", "2", "8Gi")},
			pods:       []*corev1.Pod{testPod("big", "1500m", "1Gi", onNode("new-1"))},
			pod:        testPod("web", "600m", "64Mi"),
			node:       "new-1",
			wantPlugin: "NodeResourcesFit",
			wantReason: "Insufficient cpu",
		},
		{
			name:  "cpu exactly fits",
			nodes: []*corev1.Node{testNode("new-1", "2", "8Gi")},
			pods:  []*corev1.Pod{testPod("big", "1500m", "1Gi", onNode("new-1"))},
			pod:   testPod("web", "500m", "64Mi"),
			node:  "new-1",
		},
		{
			name:       "unknown node",
			nodes:      []*corev1.Node{testNode("new-1", "2", "8Gi")},
			pod:        testPod("web", "500m", "64Mi"),
			node:       "missing",
			wantReason: "not found",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			engine := newTestEngine(t, tt.nodes, tt.pods, nil, nil)
			status := engine.CheckPredicates(t.Context(), tt.pod, tt.node)
			if tt.wantPlugin == "" && tt.wantReason == "" {
				if !status.IsSuccess() {
					t.Fatalf("want fit, got %s", describeStatus(status.Plugin(), status.Reasons()))
				}
				return
			}
			if status.IsSuccess() {
				t.Fatalf("want rejection by %s, got fit", tt.wantPlugin)
			}
			if status.Plugin() != tt.wantPlugin {
				t.Errorf("plugin = %q, want %q (%v)", status.Plugin(), tt.wantPlugin, status.Reasons())
			}
			if !strings.Contains(strings.Join(status.Reasons(), "; "), tt.wantReason) {
				t.Errorf("reasons %q lack %q", status.Reasons(), tt.wantReason)
			}
		})
	}
}

// TestTopologySpreadAcrossPlannedPods plans zone-spread pods one by one onto three new nodes
// in three zones; each step checks which zones the next pod may go to.
func TestTopologySpreadAcrossPlannedPods(t *testing.T) {
	nodes := []*corev1.Node{
		testNode("new-a", "8", "16Gi", inZone("zone-a")),
		testNode("new-b", "8", "16Gi", inZone("zone-b")),
		testNode("new-c", "8", "16Gi", inZone("zone-c")),
	}
	engine := newTestEngine(t, nodes, nil, nil, nil)
	steps := []struct {
		place   string   // node the step's pod is scheduled to
		allowed []string // nodes the pod fits before it is placed
	}{
		{place: "new-a", allowed: []string{"new-a", "new-b", "new-c"}},
		{place: "new-b", allowed: []string{"new-b", "new-c"}},
		{place: "new-c", allowed: []string{"new-c"}},
		{place: "new-a", allowed: []string{"new-a", "new-b", "new-c"}},
		{place: "new-c", allowed: []string{"new-b", "new-c"}},
	}
	for i, step := range steps {
		pod := testPod(fmt.Sprintf("web-%d", i), "100m", "64Mi", labelled("app", "web"), spread(zoneLabel, "web"))
		var allowed []string
		for _, node := range []string{"new-a", "new-b", "new-c"} {
			status := engine.CheckPredicates(t.Context(), pod, node)
			switch {
			case status.IsSuccess():
				allowed = append(allowed, node)
			case status.Plugin() != "PodTopologySpread":
				t.Fatalf("step %d: %s rejected by %s, want PodTopologySpread", i, node, status.Plugin())
			}
		}
		if !slices.Equal(allowed, step.allowed) {
			t.Fatalf("step %d: pod fits %v, want %v", i, allowed, step.allowed)
		}
		if status := engine.SchedulePod(t.Context(), pod, step.place); !status.IsSuccess() {
			t.Fatalf("step %d: scheduling onto %s: %v", i, step.place, status)
		}
	}
}

func TestSchedulePodRefusesWhatFiltersReject(t *testing.T) {
	engine := newTestEngine(t, []*corev1.Node{testNode("new-1", "1", "1Gi")}, nil, nil, nil)
	pod := testPod("web", "2", "64Mi")
	status := engine.SchedulePod(t.Context(), pod, "new-1")
	if status.IsSuccess() || status.Plugin() != "NodeResourcesFit" {
		t.Fatalf("SchedulePod = %v, want rejection by NodeResourcesFit", status)
	}
	if got := podNames(engine.Snapshot())["new-1"]; len(got) != 0 {
		t.Fatalf("rejected pod was added: %v", got)
	}
}

func TestFitsAny(t *testing.T) {
	nodes := []*corev1.Node{
		testNode("tainted", "8", "16Gi", withTaint("dedicated", "db")),
		testNode("busy", "4", "8Gi"),
		testNode("fits-1", "8", "16Gi"),
		testNode("fits-2", "8", "16Gi"),
	}
	engine := newTestEngine(t, nodes, []*corev1.Pod{testPod("db", "3", "1Gi", onNode("busy"))}, nil, nil)
	pod := testPod("web", "2", "1Gi")

	node, status := engine.FitsAny(t.Context(), pod, []string{"tainted", "busy", "fits-1", "fits-2"})
	if node != "fits-1" || !status.IsSuccess() {
		t.Fatalf("FitsAny = %q, %v; want fits-1", node, status)
	}
	node, status = engine.FitsAny(t.Context(), pod, []string{"fits-2", "fits-1"})
	if node != "fits-2" {
		t.Fatalf("FitsAny = %q, %v; want the first fitting node in the given order, fits-2", node, status)
	}

	node, status = engine.FitsAny(t.Context(), pod, []string{"tainted", "busy"})
	if node != "" || status.IsSuccess() {
		t.Fatalf("FitsAny = %q, want no node", node)
	}
	want := "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s)."
	if got := status.Message(); got != want {
		t.Errorf("message = %q\nwant      %q", got, want)
	}
	// The taint is unresolvable, the busy node is not (preemption could free it), so the
	// summary is Unschedulable.
	if status.Code() != fwk.Unschedulable || status.Plugin() != "TaintToleration" {
		t.Errorf("status = %v from %q, want Unschedulable from TaintToleration", status.Code(), status.Plugin())
	}
	_, status = engine.FitsAny(t.Context(), pod, []string{"tainted"})
	if status.Code() != fwk.UnschedulableAndUnresolvable {
		t.Errorf("only unresolvable rejections: code = %v, want UnschedulableAndUnresolvable", status.Code())
	}
}

// TestFitsAnyAgreesWithCheckPredicates compares the parallel search with a sequential one
// over a varied cluster: for every pod, FitsAny returns the first node CheckPredicates
// accepts, and FilterNodes agrees node by node.
func TestFitsAnyAgreesWithCheckPredicates(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	zones := []string{"zone-a", "zone-b", "zone-c"}
	var nodes []*corev1.Node
	var names []string
	for i := range 60 {
		name := fmt.Sprintf("node-%02d", i)
		opts := []nodeOption{inZone(zones[i%3])}
		if i%7 == 0 {
			opts = append(opts, withTaint("dedicated", "batch"))
		}
		nodes = append(nodes, testNode(name, fmt.Sprint(1+rng.IntN(8)), fmt.Sprintf("%dGi", 1+rng.IntN(16)), opts...))
		names = append(names, name)
	}
	var existing []*corev1.Pod
	for i := range 150 {
		opts := []podOption{onNode(names[rng.IntN(len(names))]), labelled("app", []string{"web", "db", "cache"}[i%3])}
		if i%10 == 0 {
			opts = append(opts, hostPort(9100))
		}
		existing = append(existing, testPod(fmt.Sprintf("existing-%d", i), fmt.Sprintf("%dm", 100+rng.IntN(900)), "256Mi", opts...))
	}
	engine := newTestEngine(t, nodes, existing, nil, nil)

	placed := 0
	for i := range 40 {
		var opts []podOption
		switch i % 5 {
		case 1:
			opts = append(opts, hostPort(9100))
		case 2:
			opts = append(opts, labelled("app", "web"), antiAffine(corev1.LabelHostname, "web"))
		case 3:
			opts = append(opts, requiringZone(zones[rng.IntN(3)]), tolerating("dedicated"))
		case 4:
			opts = append(opts, labelled("app", "db"), spread(zoneLabel, "db"))
		}
		pod := testPod(fmt.Sprintf("pending-%d", i), fmt.Sprintf("%dm", 500+rng.IntN(4000)), fmt.Sprintf("%dMi", 256+rng.IntN(8192)), opts...)
		order := slices.Clone(names)
		rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })

		want := ""
		for _, name := range order {
			if engine.CheckPredicates(t.Context(), pod, name).IsSuccess() {
				want = name
				break
			}
		}
		got, status := engine.FitsAny(t.Context(), pod, order)
		if got != want {
			t.Fatalf("pod %d: FitsAny = %q (%v), sequential = %q", i, got, status, want)
		}
		for j, st := range engine.FilterNodes(t.Context(), pod, order) {
			seq := engine.CheckPredicates(t.Context(), pod, order[j])
			if st.Code() != seq.Code() || pluginOf(st) != pluginOf(seq) {
				t.Fatalf("pod %d node %s: FilterNodes = %v/%s, CheckPredicates = %v/%s", i, order[j], st.Code(), pluginOf(st), seq.Code(), pluginOf(seq))
			}
		}
		if got != "" {
			placed++
			if status := engine.SchedulePod(t.Context(), pod, got); !status.IsSuccess() {
				t.Fatalf("pod %d: SchedulePod onto %s: %v", i, got, status)
			}
		}
	}
	// The workload is meant to exercise both outcomes.
	if placed == 0 || placed == 40 {
		t.Fatalf("%d of 40 pods placed; the test needs fitting and non-fitting pods", placed)
	}
}

func pluginOf(s *fwk.Status) string {
	if s == nil {
		return ""
	}
	return s.Plugin()
}

func TestFitsAnyStopsWithContext(t *testing.T) {
	nodes := []*corev1.Node{testNode("n-1", "1", "1Gi"), testNode("n-2", "1", "1Gi"), testNode("n-3", "1", "1Gi")}
	engine := newTestEngine(t, nodes, nil, nil, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	node, status := engine.FitsAny(ctx, testPod("web", "100m", "64Mi"), []string{"n-1", "n-2", "n-3"})
	if node != "" || status.Code() != fwk.Error {
		t.Fatalf("FitsAny after cancel = %q, %v; want an error", node, status)
	}
}
