package cloudprovider

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/joinery-dev/joinery/scheduling"
)

// Launch is one choice a launch can make: an instance type and one of its offerings.
type Launch struct {
	InstanceType *InstanceType
	Offering     *Offering
}

// CompareLaunches is the launch order, the one both providers launch in and the cost
// prediction assumes: the capacity type first (CapacityTypePriority: reserved, spot,
// on-demand), then the price, then the instance type's name, the zone and the reservation,
// so that equal choices are decided the same way every time and the prediction names the
// instance the provider launches.
func CompareLaunches(a, b Launch) int {
	return cmp.Or(
		cmp.Compare(CapacityTypePriority(a.Offering.CapacityType()), CapacityTypePriority(b.Offering.CapacityType())),
		cmp.Compare(a.Offering.Price, b.Offering.Price),
		cmp.Compare(a.InstanceType.Name, b.InstanceType.Name),
		cmp.Compare(a.Offering.Zone(), b.Offering.Zone()),
		cmp.Compare(a.Offering.ReservationID(), b.Offering.ReservationID()),
	)
}

// Launches lists what a NodeClaim with requirements reqs and resource requests requests can
// launch as, best first (CompareLaunches): the available offerings compatible with reqs of
// the instance types reqs allows whose allocatable holds requests. A provider drops from it
// what it cannot launch (no image, no subnet, an exhausted reservation) and keeps the order.
func (its InstanceTypes) Launches(reqs scheduling.Requirements, requests corev1.ResourceList) []Launch {
	var out []Launch
	for _, it := range its {
		if it.Requirements.Intersects(reqs) != nil || scheduling.Fits(requests, it.Allocatable()) != nil {
			continue
		}
		for _, o := range it.Offerings.Available().Compatible(reqs) {
			out = append(out, Launch{InstanceType: it, Offering: o})
		}
	}
	slices.SortFunc(out, CompareLaunches)
	return out
}

// LaunchOffering is the launch a NodeClaim with requirements reqs and requests would most
// likely make: the first of Launches. Both are nil when there is none.
func (its InstanceTypes) LaunchOffering(reqs scheduling.Requirements, requests corev1.ResourceList) (*InstanceType, *Offering) {
	launches := its.Launches(reqs, requests)
	if len(launches) == 0 {
		return nil, nil
	}
	return launches[0].InstanceType, launches[0].Offering
}
