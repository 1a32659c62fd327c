package main

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// testPrices is a price book with two offerings.
var testPrices = priceBook{
	{"m5.large", "spot", "zone-a"}:       0.1,
	{"m5.xlarge", "on-demand", "zone-b"}: 0.25,
}

func offeringLabels(instanceType, capacityType, zone string) map[string]string {
	if instanceType == "" {
		return nil
	}
	return map[string]string{corev1.LabelInstanceTypeStable: instanceType, "karpenter.sh/capacity-type": capacityType, corev1.LabelTopologyZone: zone}
}

func node(name, instanceType, capacityType, zone string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: offeringLabels(instanceType, capacityType, zone)}}
}

func claim(name, node string) unstructured.Unstructured {
	return unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": name},
		"status":   map[string]any{"nodeName": node},
	}}
}

func TestClusterCost(t *testing.T) {
	cases := []struct {
		name  string
		nodes []corev1.Node
		want  string
	}{
		{"no nodes", nil, "$0.000"},
		{"two priced nodes", []corev1.Node{node("a", "m5.large", "spot", "zone-a"), node("b", "m5.xlarge", "on-demand", "zone-b")}, "$0.350"},
		{"a node without offering labels", []corev1.Node{node("a", "m5.large", "spot", "zone-a"), node("b", "", "", "")}, "n/a"},
		{"an offering the catalog does not sell", []corev1.Node{node("a", "m5.large", "on-demand", "zone-a")}, "n/a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := clusterCost(tc.nodes, testPrices); got != tc.want {
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
	nc := claim("default-x1", "a")
	nc.SetLabels(offeringLabels("m5.large", "spot", "zone-a"))
	var out strings.Builder
	render(&out, snapshot{pods: []corev1.Pod{running, pending}, nodes: []corev1.Node{node("a", "m5.large", "spot", "zone-a")},
		nodeClaims: []unstructured.Unstructured{nc}, note: "hello", prices: testPrices})
	for _, want := range []string{"hello", "PENDING PODS (1)", "web-2", "Unschedulable", "NODECLAIMS (1)", "m5.large", "spot", "zone-a",
		"NODES (1)", "RUNNING PODS: 1", "COST PER HOUR: $0.100"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("view lacks %q:\n%s", want, out.String())
		}
	}
}

func TestKwokPriceBookPricesCatalogOfferings(t *testing.T) {
	book, err := kwokPriceBook()
	if err != nil {
		t.Fatal(err)
	}
	if len(book) == 0 {
		t.Fatal("the kwok catalog yields no prices")
	}
	for key, price := range book {
		if price <= 0 {
			t.Errorf("offering %+v has price %v, want > 0", key, price)
		}
	}
}
