package simulation

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// nodeTotals describes what the Filters read of each node: its pods and their requests.
func nodeTotals(s *Snapshot) string {
	out := ""
	for _, ni := range s.list {
		n := ni.(*framework.NodeInfo)
		out += fmt.Sprintf("%s: %d pods, cpu %d, memory %d, non-zero %d/%d, anti-affinity %d; ", n.Node().Name, len(n.Pods),
			n.Requested.MilliCPU, n.Requested.Memory, n.NonZeroRequested.MilliCPU, n.NonZeroRequested.Memory, len(n.PodsWithRequiredAntiAffinity))
	}
	return out
}

func podInfoOf(t *testing.T, s *Snapshot, node, pod string) *framework.PodInfo {
	t.Helper()
	for _, p := range s.nodes[node].Pods {
		if p.GetPod().Name == pod {
			return p.(*framework.PodInfo)
		}
	}
	t.Fatalf("pod %s is not on %s", pod, node)
	return nil
}

// A Reset reuses the PodInfo of a pod object the previous Reset loaded, and only that: a
// changed pod (a new object) is parsed again, and the snapshot reads as one built afresh.
func TestResetReusesPodInfosOfTheSameObjects(t *testing.T) {
	nodes := []*corev1.Node{testNode("n1", "8", "16Gi"), testNode("n2", "8", "16Gi")}
	a := testPod("a", "1", "1Gi", onNode("n1"), labelled("app", "a"), antiAffine(corev1.LabelHostname, "a"))
	b := testPod("b", "2", "2Gi", onNode("n2"))
	c := testPod("c", "500m", "1Gi", onNode("n2"))
	bigger := testPod("b", "4", "2Gi", onNode("n2")) // b changed: a new object
	s, err := NewSnapshot(nodes, []*corev1.Pod{a, b, c})
	if err != nil {
		t.Fatal(err)
	}
	first := map[string]*framework.PodInfo{"a": podInfoOf(t, s, "n1", "a"), "b": podInfoOf(t, s, "n2", "b")}
	for _, step := range []struct {
		name   string
		pods   []*corev1.Pod
		reused map[string]bool // pod → its PodInfo is first's
	}{
		{"the same objects", []*corev1.Pod{a, b, c}, map[string]bool{"a": true, "b": true}},
		{"b changed", []*corev1.Pod{a, bigger, c}, map[string]bool{"a": true, "b": false}},
		{"a gone", []*corev1.Pod{bigger, c}, nil},
		// a was not in the last load: its PodInfo was not kept.
		{"a back", []*corev1.Pod{a, bigger, c}, map[string]bool{"a": false}},
	} {
		t.Run(step.name, func(t *testing.T) {
			must(t, s.Reset(nodes, step.pods))
			fresh, err := NewSnapshot(nodes, step.pods)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := nodeTotals(s), nodeTotals(fresh); got != want {
				t.Errorf("reloaded: %s\nfresh:    %s", got, want)
			}
			for pod, reused := range step.reused {
				node := "n1"
				if pod == "b" {
					node = "n2"
				}
				if got := podInfoOf(t, s, node, pod) == first[pod]; got != reused {
					t.Errorf("PodInfo of %s reused: %v, want %v", pod, got, reused)
				}
			}
			if got := s.PodInfos().Len(); got != len(step.pods) {
				t.Errorf("%d PodInfos kept for %d pods loaded", got, len(step.pods))
			}
		})
	}
}

// versioned is pod at resourceVersion rv, as the API server hands it out.
func versioned(pod *corev1.Pod, rv string) *corev1.Pod {
	out := pod.DeepCopy()
	out.ResourceVersion = rv
	return out
}

// A pod version (UID and resourceVersion) keeps its parsed content across objects: the
// manager's cache hands every List a deep copy, and the informers' events come before the
// first load. A new version, or a pod without one, is parsed again; whatever was reused, the
// snapshot reads as one built afresh, and its pods are the objects loaded.
func TestPodInfosFollowPodVersions(t *testing.T) {
	nodes := []*corev1.Node{testNode("n1", "8", "16Gi"), testNode("n2", "8", "16Gi")}
	a := versioned(testPod("a", "1", "1Gi", onNode("n1"), labelled("app", "a"), antiAffine(corev1.LabelHostname, "a")), "7")
	b := versioned(testPod("b", "2", "2Gi", onNode("n2"), labelled("app", "b"), antiAffine(corev1.LabelHostname, "b")), "")
	pending := versioned(testPod("p", "1", "1Gi", antiAffine(corev1.LabelHostname, "a")), "3")
	resized := versioned(testPod("a", "4", "1Gi", onNode("n1"), labelled("app", "a"), antiAffine(corev1.LabelHostname, "a")), "8")
	terms := func(info *framework.PodInfo) *fwk.AffinityTerm { return &info.RequiredAntiAffinityTerms[0] }

	s := &Snapshot{}
	events := s.PodInfos()
	for _, p := range []*corev1.Pod{a, b, pending} {
		events.Observe(p)
	}
	if got := events.Len(); got != 2 {
		t.Fatalf("%d PodInfos observed, want 2 (the pending pod is not loaded)", got)
	}
	observed := map[string]*fwk.AffinityTerm{}
	for _, e := range events.byUID {
		observed[e.pod.Name] = terms(e.info)
	}
	for _, step := range []struct {
		name string
		pods []*corev1.Pod
		// shared: pod → its parsed terms are the observed ones
		shared map[string]bool
	}{
		{"the observed objects", []*corev1.Pod{a, b}, map[string]bool{"a": true, "b": true}},
		{"copies of the same versions", []*corev1.Pod{versioned(a, "7"), versioned(b, "")}, map[string]bool{"a": true, "b": false}},
		{"a at a new version", []*corev1.Pod{resized, b}, map[string]bool{"a": false}},
	} {
		t.Run(step.name, func(t *testing.T) {
			must(t, s.Reset(nil, nil)) // the solver releases the snapshot after each plan
			must(t, s.Reset(nodes, step.pods))
			fresh, err := NewSnapshot(nodes, step.pods)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := nodeTotals(s), nodeTotals(fresh); got != want {
				t.Errorf("reloaded: %s\nfresh:    %s", got, want)
			}
			for _, p := range step.pods {
				node := p.Spec.NodeName
				info := podInfoOf(t, s, node, p.Name)
				if info.Pod != p {
					t.Errorf("PodInfo of %s holds another object than the one loaded", p.Name)
				}
				if shared, ok := step.shared[p.Name]; ok && (terms(info) == observed[p.Name]) != shared {
					t.Errorf("parsed terms of %s shared: %v, want %v", p.Name, !shared, shared)
				}
			}
		})
	}
	events.Forget(resized)
	if _, ok := events.byUID[resized.UID]; ok {
		t.Error("a deleted pod's PodInfo is kept")
	}
}

// Events arrive on the informers' goroutines while a Reset loads (run with -race): the
// snapshot still reads as one built afresh.
func TestPodInfosObservedDuringResets(t *testing.T) {
	nodes := []*corev1.Node{testNode("n1", "8", "16Gi"), testNode("n2", "8", "16Gi")}
	var pods []*corev1.Pod
	for i := range 40 {
		pods = append(pods, versioned(testPod(fmt.Sprintf("p%d", i), "100m", "128Mi", onNode(fmt.Sprintf("n%d", 1+i%2)),
			labelled("app", "a"), antiAffine(corev1.LabelHostname, "b")), "1"))
	}
	s := &Snapshot{}
	events := s.PodInfos()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 20 {
			for _, p := range pods {
				events.Observe(versioned(p, "1"))
				events.Forget(p)
			}
		}
	}()
	for range 20 {
		must(t, s.Reset(nodes, pods))
	}
	<-done
	fresh, err := NewSnapshot(nodes, pods)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := nodeTotals(s), nodeTotals(fresh); got != want {
		t.Errorf("reloaded: %s\nfresh:    %s", got, want)
	}
}
