package cloudprovider

import (
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/scheduling"
)

// ReservationIDLabel is the label key that carries an instance's capacity reservation, as
// Karpenter's cloudprovider.ReservationIDLabel: empty until a provider that offers reserved
// capacity registers its key with RegisterReservationIDLabel (the AWS provider registers
// karpenter.k8s.aws/capacity-reservation-id).
var ReservationIDLabel string

// RegisterReservationIDLabel sets ReservationIDLabel. Providers call it from an init function;
// two providers linked into one binary must agree on the key, or it panics.
func RegisterReservationIDLabel(key string) {
	if ReservationIDLabel != "" && ReservationIDLabel != key {
		panic(fmt.Sprintf("cloudprovider: reservation label %q registered, but %q is already", key, ReservationIDLabel))
	}
	ReservationIDLabel = key
}

// Offering is one way to buy an instance type: a zone and capacity type (and, for reserved
// capacity, a reservation), at a price, available or not.
type Offering struct {
	// Requirements pin the offering's zone, capacity type and reservation id. Offerings built with
	// NewOffering or NewReservedOffering say DoesNotExist for the reservation id when they are
	// not reserved, so a NodeClaim that asks for a reservation never matches them.
	Requirements scheduling.Requirements
	// Price per hour, in the provider's currency.
	Price float64
	// Available is false when the offering is known not to launch (for example after an
	// insufficient-capacity answer).
	Available bool
	// ReservationCapacity is how many more instances a reserved offering can launch.
	ReservationCapacity int
}

// NewOffering returns an offering of zone and capacityType that is not reserved.
func NewOffering(zone, capacityType string, price float64, available bool) *Offering {
	reqs := scheduling.NewRequirements(
		scheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zone),
		scheduling.NewRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, capacityType),
	)
	if ReservationIDLabel != "" {
		reqs.Add(scheduling.NewRequirement(ReservationIDLabel, corev1.NodeSelectorOpDoesNotExist))
	}
	return &Offering{
		Requirements: reqs,
		Price:        price,
		Available:    available,
	}
}

// NewReservedOffering returns an offering of the capacity reservation reservationID in zone,
// available while capacity is positive. It panics when no provider registered
// ReservationIDLabel.
func NewReservedOffering(zone, reservationID string, price float64, capacity int) *Offering {
	if ReservationIDLabel == "" {
		panic("cloudprovider: a reserved offering needs ReservationIDLabel; the provider registers it with RegisterReservationIDLabel")
	}
	return &Offering{
		Requirements: scheduling.NewRequirements(
			scheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zone),
			scheduling.NewRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeReserved),
			scheduling.NewRequirement(ReservationIDLabel, corev1.NodeSelectorOpIn, reservationID),
		),
		Price:               price,
		Available:           capacity > 0,
		ReservationCapacity: capacity,
	}
}

// Zone is the offering's zone, or "" when it does not pin one.
func (o *Offering) Zone() string { return o.single(corev1.LabelTopologyZone) }

// CapacityType is the offering's capacity type, or "" when it does not pin one.
func (o *Offering) CapacityType() string { return o.single(karpv1.CapacityTypeLabelKey) }

// ReservationID is the capacity reservation of a reserved offering, or "".
func (o *Offering) ReservationID() string {
	if ReservationIDLabel == "" {
		return ""
	}
	return o.single(ReservationIDLabel)
}

func (o *Offering) single(key string) string {
	req, ok := o.Requirements[key]
	if !ok || req.Operator() != corev1.NodeSelectorOpIn || req.Len() != 1 {
		return ""
	}
	return req.Any()
}

// CompatibleWith reports whether a node meeting reqs can be bought through this offering.
func (o *Offering) CompatibleWith(reqs scheduling.Requirements) bool {
	return reqs.Intersects(o.Requirements) == nil
}

// Offerings is a list of offerings; its methods return new lists and never reorder the receiver.
type Offerings []*Offering

// Available returns the offerings marked available.
func (ofs Offerings) Available() Offerings {
	return ofs.filter(func(o *Offering) bool { return o.Available })
}

// Compatible returns the offerings a node meeting reqs can be bought through.
func (ofs Offerings) Compatible(reqs scheduling.Requirements) Offerings {
	return ofs.filter(func(o *Offering) bool { return o.CompatibleWith(reqs) })
}

// HasCompatible reports whether some available offering is compatible with reqs.
func (ofs Offerings) HasCompatible(reqs scheduling.Requirements) bool {
	for _, o := range ofs {
		if o.Available && o.CompatibleWith(reqs) {
			return true
		}
	}
	return false
}

// Cheapest returns the offering with the lowest price (the first of equals), or nil.
func (ofs Offerings) Cheapest() *Offering {
	return ofs.pick(func(a, b *Offering) bool { return a.Price < b.Price })
}

// MostExpensive returns the offering with the highest price (the first of equals), or nil.
func (ofs Offerings) MostExpensive() *Offering {
	return ofs.pick(func(a, b *Offering) bool { return a.Price > b.Price })
}

// CheapestPrice is the lowest price among the offerings, or +Inf when there are none, so that
// types without an offering sort last.
func (ofs Offerings) CheapestPrice() float64 {
	if cheapest := ofs.Cheapest(); cheapest != nil {
		return cheapest.Price
	}
	return math.Inf(1)
}

func (ofs Offerings) filter(keep func(*Offering) bool) Offerings {
	var out Offerings
	for _, o := range ofs {
		if keep(o) {
			out = append(out, o)
		}
	}
	return out
}

// pick returns the first offering that no later one is better than.
func (ofs Offerings) pick(better func(a, b *Offering) bool) *Offering {
	var best *Offering
	for _, o := range ofs {
		if best == nil || better(o, best) {
			best = o
		}
	}
	return best
}

// CapacityTypePriority orders capacity types for a launch that allows several (the first key
// of CompareLaunches): reserved capacity is already paid for, spot is cheaper than on-demand.
// Lower sorts first; unknown types sort last.
func CapacityTypePriority(capacityType string) int {
	switch capacityType {
	case karpv1.CapacityTypeReserved:
		return 0
	case karpv1.CapacityTypeSpot:
		return 1
	case karpv1.CapacityTypeOnDemand:
		return 2
	default:
		return 3
	}
}
