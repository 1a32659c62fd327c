package cloudprovider

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/scheduling"
)

func TestLaunchOffering(t *testing.T) {
	its := InstanceTypes{
		testType("a", "m5", NewOffering("zone-a", "spot", 0.3, false), NewOffering("zone-a", "on-demand", 1, true)),
		testType("b", "c5", NewOffering("zone-b", "spot", 0.5, true), NewOffering("zone-b", "on-demand", 0.8, true)),
	}
	tests := []struct {
		name     string
		reqs     scheduling.Requirements
		wantType string
		wantCT   string
	}{
		{"spot before on-demand, available only", scheduling.NewRequirements(), "b", "spot"},
		{"only on-demand allowed", scheduling.NewRequirements(req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "on-demand")), "b", "on-demand"},
		{"only type a", scheduling.NewRequirements(req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "a")), "a", "on-demand"},
		{"nothing fits", scheduling.NewRequirements(req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-c")), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it, o := its.LaunchOffering(tt.reqs, nil)
			if tt.wantType == "" {
				if o != nil {
					t.Errorf("offering of %s, want none", it.Name)
				}
				return
			}
			if o == nil || it.Name != tt.wantType || o.CapacityType() != tt.wantCT {
				t.Errorf("got %v %v, want %s %s", it, o, tt.wantType, tt.wantCT)
			}
		})
	}
}

// TestLaunchesOrder pins the launch order the providers and the cost prediction share,
// ties included: the catalog's order never decides.
func TestLaunchesOrder(t *testing.T) {
	od := func(zone string, price float64) *Offering {
		return NewOffering(zone, karpv1.CapacityTypeOnDemand, price, true)
	}
	spot := func(zone string, price float64) *Offering {
		return NewOffering(zone, karpv1.CapacityTypeSpot, price, true)
	}
	tests := []struct {
		name string
		its  InstanceTypes
		want []string // type/zone/capacity type[/reservation], best first
	}{
		{
			name: "reserved first even when dearer, then spot before a cheaper on-demand",
			its:  InstanceTypes{testType("a", "m5", od("zone-a", 0.05), spot("zone-b", 0.09), spot("zone-a", 0.08), NewReservedOffering("zone-c", "cr-1", 0.5, 1))},
			want: []string{"a/zone-c/reserved/cr-1", "a/zone-a/spot", "a/zone-b/spot", "a/zone-a/on-demand"},
		},
		{
			name: "a price tie goes to the type named first, whatever the catalog's order",
			its:  InstanceTypes{testType("z", "m5", spot("zone-a", 0.1)), testType("b", "m5", spot("zone-a", 0.1))},
			want: []string{"b/zone-a/spot", "z/zone-a/spot"},
		},
		{
			name: "a tie within one type goes to the zone named first",
			its:  InstanceTypes{testType("a", "m5", od("zone-c", 0.1), od("zone-a", 0.1), od("zone-b", 0.1))},
			want: []string{"a/zone-a/on-demand", "a/zone-b/on-demand", "a/zone-c/on-demand"},
		},
		{
			name: "two reservations at one price in one zone: the reservation named first",
			its:  InstanceTypes{testType("a", "m5", NewReservedOffering("zone-a", "cr-2", 0.1, 1), NewReservedOffering("zone-a", "cr-1", 0.1, 1))},
			want: []string{"a/zone-a/reserved/cr-1", "a/zone-a/reserved/cr-2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, l := range tt.its.Launches(scheduling.NewRequirements(), nil) {
				s := l.InstanceType.Name + "/" + l.Offering.Zone() + "/" + l.Offering.CapacityType()
				if id := l.Offering.ReservationID(); id != "" {
					s += "/" + id
				}
				got = append(got, s)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("Launches() = %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("Launches() = %v, want %v", got, tt.want)
				}
			}
			it, o := tt.its.LaunchOffering(scheduling.NewRequirements(), nil)
			if first := tt.its.Launches(scheduling.NewRequirements(), nil)[0]; it != first.InstanceType || o != first.Offering {
				t.Errorf("LaunchOffering() = %s %v, want the first launch", it.Name, o)
			}
		})
	}
}

func TestLaunchesHoldRequests(t *testing.T) {
	small := testType("small", "m5", NewOffering("zone-a", karpv1.CapacityTypeSpot, 0.1, true))
	small.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	big := testType("big", "m5", NewOffering("zone-a", karpv1.CapacityTypeSpot, 0.2, true))
	big.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
	its := InstanceTypes{small, big}
	it, _ := its.LaunchOffering(scheduling.NewRequirements(), corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")})
	if it == nil || it.Name != "big" {
		t.Errorf("LaunchOffering for 2 cpu = %v, want big (small does not hold the requests)", it)
	}
}
