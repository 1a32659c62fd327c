package cloudprovider

import (
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/scheduling"
)

func req(key string, op corev1.NodeSelectorOperator, values ...string) *scheduling.Requirement {
	return scheduling.NewRequirement(key, op, values...)
}

func TestOfferingAccessors(t *testing.T) {
	od := NewOffering("zone-a", karpv1.CapacityTypeOnDemand, 0.1, true)
	if od.Zone() != "zone-a" || od.CapacityType() != "on-demand" || od.ReservationID() != "" {
		t.Errorf("on-demand offering: zone %q, capacity type %q, reservation %q", od.Zone(), od.CapacityType(), od.ReservationID())
	}
	rsv := NewReservedOffering("zone-b", "cr-1", 0.001, 2)
	if rsv.Zone() != "zone-b" || rsv.CapacityType() != "reserved" || rsv.ReservationID() != "cr-1" || !rsv.Available || rsv.ReservationCapacity != 2 {
		t.Errorf("reserved offering: %+v", rsv)
	}
	if NewReservedOffering("zone-b", "cr-2", 0.001, 0).Available {
		t.Error("a reservation without capacity left is available")
	}
}

func TestOfferingCompatibleWith(t *testing.T) {
	spotA := NewOffering("zone-a", karpv1.CapacityTypeSpot, 0.1, true)
	reservedA := NewReservedOffering("zone-a", "cr-1", 0.01, 1)
	tests := []struct {
		name     string
		offering *Offering
		reqs     scheduling.Requirements
		want     bool
	}{
		{name: "no requirements", offering: spotA, reqs: scheduling.NewRequirements(), want: true},
		{name: "matching zone", offering: spotA, reqs: scheduling.NewRequirements(req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-a", "zone-b")), want: true},
		{name: "other zone", offering: spotA, reqs: scheduling.NewRequirements(req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-b"))},
		{name: "other capacity type", offering: spotA, reqs: scheduling.NewRequirements(req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "on-demand"))},
		{name: "excluded capacity type", offering: spotA, reqs: scheduling.NewRequirements(req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpNotIn, "spot"))},
		{name: "asks for a reservation", offering: spotA, reqs: scheduling.NewRequirements(req(testReservationLabel, corev1.NodeSelectorOpExists))},
		{name: "reservation asked for", offering: reservedA, reqs: scheduling.NewRequirements(req(testReservationLabel, corev1.NodeSelectorOpIn, "cr-1")), want: true},
		{name: "other reservation", offering: reservedA, reqs: scheduling.NewRequirements(req(testReservationLabel, corev1.NodeSelectorOpIn, "cr-2"))},
		{name: "reserved when only spot allowed", offering: reservedA, reqs: scheduling.NewRequirements(req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "spot"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.offering.CompatibleWith(tt.reqs); got != tt.want {
				t.Errorf("CompatibleWith() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestOfferingsHelpers(t *testing.T) {
	odA := NewOffering("zone-a", karpv1.CapacityTypeOnDemand, 0.30, true)
	spotA := NewOffering("zone-a", karpv1.CapacityTypeSpot, 0.10, true)
	spotB := NewOffering("zone-b", karpv1.CapacityTypeSpot, 0.05, false)
	odB := NewOffering("zone-b", karpv1.CapacityTypeOnDemand, 0.30, true)
	ofs := Offerings{odA, spotA, spotB, odB}

	if got := ofs.Available(); len(got) != 3 || got[2] != odB {
		t.Errorf("Available() = %v", got)
	}
	if got := ofs.Compatible(scheduling.NewRequirements(req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-b"))); len(got) != 2 || got[0] != spotB || got[1] != odB {
		t.Errorf("Compatible(zone-b) = %v", got)
	}
	if got := ofs.Cheapest(); got != spotB {
		t.Errorf("Cheapest() = %+v, want spot in zone-b", got)
	}
	if got := ofs.Available().Cheapest(); got != spotA {
		t.Errorf("Available().Cheapest() = %+v, want spot in zone-a", got)
	}
	if got := ofs.MostExpensive(); got != odA {
		t.Errorf("MostExpensive() = %+v, want the first of the equally priced on-demand offerings", got)
	}
	if !ofs.HasCompatible(scheduling.NewRequirements(req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-b"))) {
		t.Error("HasCompatible(zone-b) = false, want true (on-demand is available there)")
	}
	if ofs.HasCompatible(scheduling.NewRequirements(req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-b"), req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "spot"))) {
		t.Error("HasCompatible(zone-b, spot) = true, but that offering is unavailable")
	}
	if got := (Offerings{}).Cheapest(); got != nil {
		t.Errorf("Cheapest() of none = %v", got)
	}
	if got := (Offerings{}).CheapestPrice(); !math.IsInf(got, 1) {
		t.Errorf("CheapestPrice() of none = %v, want +Inf", got)
	}
}

func TestCapacityTypePriority(t *testing.T) {
	order := []string{karpv1.CapacityTypeReserved, karpv1.CapacityTypeSpot, karpv1.CapacityTypeOnDemand, "something-else"}
	for i := 1; i < len(order); i++ {
		if CapacityTypePriority(order[i-1]) >= CapacityTypePriority(order[i]) {
			t.Errorf("%s does not sort before %s", order[i-1], order[i])
		}
	}
}

func TestRegisterReservationIDLabel(t *testing.T) {
	RegisterReservationIDLabel(testReservationLabel) // the same key again is fine
	defer func() {
		if recover() == nil {
			t.Error("registering a second, different reservation label did not panic")
		}
		if ReservationIDLabel != testReservationLabel {
			t.Errorf("ReservationIDLabel = %q after a refused registration", ReservationIDLabel)
		}
	}()
	RegisterReservationIDLabel("example.org/other-reservation-id")
}
