package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/joinery-dev/joinery/cli/whatif"
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

// TestRenderNext (issue 26): each node's NEXT is the verdict `joinery explain node -o json`
// gives, and the view lists its failed checks as the reasons; a node not yet explained shows
// "…". The sample's lone spot node stays because spot-to-spot consolidation is off.
func TestRenderNext(t *testing.T) {
	explained := `{"node":"a","nodeClaim":"default-x1","nodePool":"default","verdict":"not disrupted","checks":[
		{"check":"initialized","ok":true,"detail":"NodeClaim condition Initialized"},
		{"check":"drifted","ok":false,"detail":"condition Drifted absent"},
		{"check":"simulation single-node consolidation","ok":false,"detail":"SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node"}]}`
	var ex whatif.NodeExplanation
	if err := json.Unmarshal([]byte(explained), &ex); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	render(&out, snapshot{nodes: []corev1.Node{node("a", "m5.large", "spot", "zone-a"), node("b", "m5.large", "spot", "zone-a")},
		prices: testPrices, next: map[string]nextStep{"a": nextOf(&ex)}})
	view := out.String()
	lines := strings.Split(view, "\n")
	row := func(name string) string {
		for _, l := range lines {
			if strings.HasPrefix(l, "  "+name+" ") {
				return l
			}
		}
		t.Fatalf("no row for node %s:\n%s", name, view)
		return ""
	}
	if !strings.Contains(lines[slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "PODS") && strings.Contains(l, "PRICE/H") })], "NEXT") {
		t.Errorf("the nodes table has no NEXT column:\n%s", view)
	}
	if r := row("a"); !strings.HasSuffix(strings.TrimSpace(r), "not disrupted") {
		t.Errorf("node a's row %q does not end with its verdict", r)
	}
	if r := row("b"); !strings.HasSuffix(strings.TrimSpace(r), "…") {
		t.Errorf("node b, not yet explained, shows %q", r)
	}
	for _, want := range []string{"why a (joinery explain node a):", "- simulation single-node consolidation: SpotToSpotConsolidation is disabled", "- drifted: condition Drifted absent"} {
		if !strings.Contains(view, want) {
			t.Errorf("view lacks %q:\n%s", want, view)
		}
	}
	if strings.Contains(view, "initialized: ") {
		t.Errorf("view lists a check that passed:\n%s", view)
	}
}
