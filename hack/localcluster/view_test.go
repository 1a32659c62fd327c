package main

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func node(name, price string) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if price != "" {
		n.Annotations = map[string]string{PriceAnnotation: price}
	}
	return n
}

func claim(name, node, price string) unstructured.Unstructured {
	nc := unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": name},
		"status":   map[string]any{"nodeName": node},
	}}
	if price != "" {
		nc.SetAnnotations(map[string]string{PriceAnnotation: price})
	}
	return nc
}

func TestClusterCost(t *testing.T) {
	cases := []struct {
		name   string
		nodes  []corev1.Node
		claims []unstructured.Unstructured
		want   string
	}{
		{"no nodes", nil, nil, "$0.000"},
		{"prices on nodes", []corev1.Node{node("a", "0.1"), node("b", "0.25")}, nil, "$0.350"},
		{"price from the NodeClaim", []corev1.Node{node("a", "")}, []unstructured.Unstructured{claim("c", "a", "0.5")}, "$0.500"},
		{"one node without a price", []corev1.Node{node("a", "0.1"), node("b", "")}, nil, "n/a"},
		{"unparsable price", []corev1.Node{node("a", "cheap")}, nil, "n/a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := clusterCost(tc.nodes, tc.claims); got != tc.want {
				t.Errorf("clusterCost = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestRenderSections(t *testing.T) {
	running := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1"}, Spec: corev1.PodSpec{NodeName: "a"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	pending := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-2"}, Status: corev1.PodStatus{
		Phase:      corev1.PodPending,
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable"}},
	}}
	nc := claim("default-x1", "a", "0.2")
	nc.SetLabels(map[string]string{corev1.LabelInstanceTypeStable: "m5.large", "karpenter.sh/capacity-type": "spot", corev1.LabelTopologyZone: "zone-a"})
	var out strings.Builder
	render(&out, snapshot{pods: []corev1.Pod{running, pending}, nodes: []corev1.Node{node("a", "")}, nodeClaims: []unstructured.Unstructured{nc}, note: "hello"})
	for _, want := range []string{"hello", "PENDING PODS (1)", "web-2", "Unschedulable", "NODECLAIMS (1)", "m5.large", "spot", "zone-a",
		"NODES (1)", "RUNNING PODS: 1", "COST PER HOUR: $0.200"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("view lacks %q:\n%s", want, out.String())
		}
	}
}
