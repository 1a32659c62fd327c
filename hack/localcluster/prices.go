package main

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider/kwok/catalog"
)

// priceBook is the hourly price of each offering the local cluster's cloud can sell, keyed by
// the labels a node of that offering carries, so the live view prices nodes and NodeClaims
// from their well-known labels the way a bill would.
type priceBook map[offeringKey]float64

type offeringKey struct{ instanceType, capacityType, zone string }

// kwokPriceBook reads the prices of the kwok provider's embedded catalog.
func kwokPriceBook() (priceBook, error) {
	file, err := catalog.Default()
	if err != nil {
		return nil, fmt.Errorf("loading the kwok catalog: %w", err)
	}
	book := priceBook{}
	for _, it := range file.InstanceTypes {
		for _, o := range it.Offerings {
			book[offeringKey{it.Name, o.CapacityType, o.Zone}] = o.Price
		}
	}
	return book, nil
}

// price looks up the offering named by a node's or NodeClaim's labels.
func (b priceBook) price(labels map[string]string) (float64, bool) {
	p, ok := b[offeringKey{
		instanceType: labels[corev1.LabelInstanceTypeStable],
		capacityType: labels[karpv1.CapacityTypeLabelKey],
		zone:         labels[corev1.LabelTopologyZone],
	}]
	return p, ok
}
