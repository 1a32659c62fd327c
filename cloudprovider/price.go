package cloudprovider

import (
	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// RunningOffering returns the instance type and offering a node with these labels runs on:
// its instance type, zone and capacity type (and, for reserved capacity, its reservation),
// the cheapest such offering, available or not. Both are nil when the labels name no
// instance type or no such offering.
func (its InstanceTypes) RunningOffering(labels map[string]string) (*InstanceType, *Offering) {
	name := labels[corev1.LabelInstanceTypeStable]
	if name == "" {
		return nil, nil
	}
	var bestType *InstanceType
	var best *Offering
	for _, it := range its {
		if it.Name != name {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone() != labels[corev1.LabelTopologyZone] || o.CapacityType() != labels[karpv1.CapacityTypeLabelKey] {
				continue
			}
			if id := o.ReservationID(); id != "" && id != labels[ReservationIDLabel] {
				continue
			}
			if best == nil || o.Price < best.Price {
				bestType, best = it, o
			}
		}
	}
	return bestType, best
}
