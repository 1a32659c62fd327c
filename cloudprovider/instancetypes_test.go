package cloudprovider

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/scheduling"
)

// testType is an instance type of family with its offerings, arch amd64.
func testType(name, family string, offerings ...*Offering) *InstanceType {
	return &InstanceType{
		Name: name,
		Requirements: scheduling.NewRequirements(
			req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, name),
			req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"),
			req(testFamilyLabel, corev1.NodeSelectorOpIn, family),
		),
		Offerings: offerings,
	}
}

func names(its InstanceTypes) string {
	out := make([]string, len(its))
	for i, it := range its {
		out[i] = it.Name
	}
	return strings.Join(out, ",")
}

func TestInstanceTypesCompatible(t *testing.T) {
	its := InstanceTypes{
		testType("a", "m5", NewOffering("zone-a", "spot", 1, true)),
		testType("b", "c5", NewOffering("zone-b", "on-demand", 1, true)),
		testType("c", "m5", NewOffering("zone-a", "on-demand", 1, false)),
	}
	tests := []struct {
		name string
		reqs scheduling.Requirements
		want string
	}{
		{name: "everything with an available offering", reqs: scheduling.NewRequirements(), want: "a,b"},
		{name: "by family", reqs: scheduling.NewRequirements(req(testFamilyLabel, corev1.NodeSelectorOpIn, "m5")), want: "a"},
		{name: "by zone", reqs: scheduling.NewRequirements(req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-b")), want: "b"},
		{name: "by arch", reqs: scheduling.NewRequirements(req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64")), want: ""},
		{name: "custom key the types do not define", reqs: scheduling.NewRequirements(req("team", corev1.NodeSelectorOpIn, "x")), want: "a,b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := names(its.Compatible(tt.reqs)); got != tt.want {
				t.Errorf("Compatible() = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestOrderByPrice(t *testing.T) {
	its := InstanceTypes{
		testType("dear", "m5", NewOffering("zone-a", "on-demand", 0.9, true)),
		testType("spot-only-b", "m5", NewOffering("zone-b", "spot", 0.1, true), NewOffering("zone-a", "on-demand", 0.8, true)),
		testType("unavailable", "m5", NewOffering("zone-a", "spot", 0.01, false)),
		testType("tie-b", "m5", NewOffering("zone-a", "on-demand", 0.5, true)),
		testType("tie-a", "m5", NewOffering("zone-a", "on-demand", 0.5, true)),
	}
	tests := []struct {
		name string
		reqs scheduling.Requirements
		want string
	}{
		{name: "cheapest available offering", reqs: scheduling.NewRequirements(), want: "spot-only-b,tie-a,tie-b,dear,unavailable"},
		{name: "only zone-a offerings count", reqs: scheduling.NewRequirements(req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-a")), want: "tie-a,tie-b,spot-only-b,dear,unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := names(its)
			if got := names(its.OrderByPrice(tt.reqs)); got != tt.want {
				t.Errorf("OrderByPrice() = %s, want %s", got, tt.want)
			}
			if names(its) != before {
				t.Error("OrderByPrice reordered its receiver")
			}
		})
	}
}

func TestTruncate(t *testing.T) {
	// Ten types priced by index; families alternate m5, m5, c5, c5, r5, r5, ...
	families := []string{"m5", "m5", "c5", "c5", "r5", "r5", "m6", "m6", "c6", "c6"}
	var its InstanceTypes
	for i, family := range families {
		its = append(its, testType(fmt.Sprintf("t%d", i), family, NewOffering("zone-a", karpv1.CapacityTypeOnDemand, float64(i), true)))
	}
	familyMin := func(n int) scheduling.Requirements {
		r := req(testFamilyLabel, corev1.NodeSelectorOpExists)
		r.MinValues = ptr.To(n)
		return scheduling.NewRequirements(r)
	}
	tests := []struct {
		name    string
		reqs    scheduling.Requirements
		max     int
		want    string
		wantErr bool
	}{
		{name: "no minValues", reqs: scheduling.NewRequirements(), max: 3, want: "t0,t1,t2"},
		{name: "max beyond the list", reqs: scheduling.NewRequirements(), max: 20, want: "t0,t1,t2,t3,t4,t5,t6,t7,t8,t9"},
		{name: "minValues already met", reqs: familyMin(2), max: 3, want: "t0,t1,t2"},
		{name: "minValues extends with the next new values only", reqs: familyMin(4), max: 3, want: "t0,t1,t2,t4,t6"},
		{name: "minValues cannot be met", reqs: familyMin(6), max: 2, want: "t0,t1,t2,t4,t6,t8", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := its.Truncate(tt.reqs, tt.max)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Truncate() error = %v, wantErr %v", err, tt.wantErr)
			}
			if names(got) != tt.want {
				t.Errorf("Truncate() = %s, want %s", names(got), tt.want)
			}
			if tt.wantErr != (got.MinValuesShortfall(tt.reqs) != nil) {
				t.Errorf("MinValuesShortfall() disagrees with Truncate's error %v", err)
			}
		})
	}
}

func TestTruncateCountsOnlyAllowedValues(t *testing.T) {
	its := InstanceTypes{
		testType("t0", "m5", NewOffering("zone-a", "spot", 0, true)),
		testType("t1", "c5", NewOffering("zone-a", "spot", 1, true)),
		testType("t2", "r5", NewOffering("zone-a", "spot", 2, true)),
	}
	// Only m5 and r5 are allowed, so c5 adds nothing toward minValues 2.
	r := req(testFamilyLabel, corev1.NodeSelectorOpIn, "m5", "r5")
	r.MinValues = ptr.To(2)
	got, err := its.Truncate(scheduling.NewRequirements(r), 1)
	if err != nil {
		t.Fatal(err)
	}
	if names(got) != "t0,t2" {
		t.Errorf("Truncate() = %s, want t0,t2", names(got))
	}
}

// TestCheaperThan: a type is cheaper only when every offering a launch may pick is; an
// unavailable dearer offering still counts, an unavailable cheap one alone does not launch.
func TestCheaperThan(t *testing.T) {
	its := InstanceTypes{
		testType("both-cheaper", "m5", NewOffering("zone-a", "spot", 0.1, true), NewOffering("zone-a", "on-demand", 0.3, true)),
		testType("spot-only-cheaper", "m5", NewOffering("zone-a", "spot", 0.1, true), NewOffering("zone-a", "on-demand", 0.6, true)),
		testType("dearer-zone", "m5", NewOffering("zone-a", "on-demand", 0.2, true), NewOffering("zone-b", "on-demand", 0.7, true)),
		testType("dearer-unavailable", "m5", NewOffering("zone-a", "on-demand", 0.2, true), NewOffering("zone-a", "spot", 0.6, false)),
		testType("only-unavailable", "m5", NewOffering("zone-a", "on-demand", 0.1, false)),
		testType("equal", "m5", NewOffering("zone-a", "on-demand", 0.5, true)),
	}
	spot := scheduling.NewRequirements(req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeSpot))
	zoneA := scheduling.NewRequirements(req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-a"))
	tests := []struct {
		name string
		reqs scheduling.Requirements
		want string
	}{
		{name: "any offering", reqs: scheduling.NewRequirements(), want: "both-cheaper"},
		{name: "pinned to spot", reqs: spot, want: "both-cheaper,spot-only-cheaper"},
		{name: "pinned to a zone", reqs: zoneA, want: "both-cheaper,dearer-zone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := names(its.CheaperThan(tt.reqs, 0.5)); got != tt.want {
				t.Errorf("CheaperThan = %s, want %s", got, tt.want)
			}
		})
	}
}
