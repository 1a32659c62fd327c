package main

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	awspricing "github.com/joinery-dev/joinery/cloudprovider/aws/pricing"
	"github.com/joinery-dev/joinery/cloudprovider/kwok/catalog"
	"github.com/joinery-dev/joinery/internal/localcluster"
)

// pricer prices a node or NodeClaim from its well-known labels (instance type, capacity type,
// zone), the way a bill would.
type pricer interface {
	price(labels map[string]string) (float64, bool)
}

// priceBookFor is the pricer of the cluster's cloud provider; on kwok with the NodeOverlay
// gate on, the catalog's prices as the cluster's overlays adjust them.
func priceBookFor(ctx context.Context, c *localcluster.Cluster) (pricer, error) {
	if c.CloudProvider() == localcluster.CloudProviderAWS {
		return awsPriceBook(ctx, c.AWSEmulatorURL())
	}
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	if overlaid, err := kwokOverlayPrices(dyn); err != nil || overlaid != nil {
		return overlaid, err
	}
	return kwokPriceBook()
}

// priceBook is the hourly price of each offering the local cluster's cloud can sell.
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

// awsPrices are the emulator's prices as joinery reads them: the Pricing API for on-demand,
// the spot price history for spot.
type awsPrices struct{ prices *awspricing.Provider }

func awsPriceBook(ctx context.Context, endpoint string) (pricer, error) {
	cfg := aws.Config{
		Region:       localcluster.AWSRegion,
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIAJOINERYLOCAL", "local-cluster-secret", ""),
	}
	prices := awspricing.New(pricing.NewFromConfig(cfg), ec2.NewFromConfig(cfg), awspricing.Options{Region: cfg.Region})
	if err := prices.Refresh(ctx); err != nil {
		return nil, fmt.Errorf("reading the AWS emulator's prices: %w", err)
	}
	return awsPrices{prices}, nil
}

func (p awsPrices) price(labels map[string]string) (float64, bool) {
	instanceType := labels[corev1.LabelInstanceTypeStable]
	switch labels[karpv1.CapacityTypeLabelKey] {
	case karpv1.CapacityTypeSpot:
		return p.prices.SpotPrice(instanceType, labels[corev1.LabelTopologyZone])
	case karpv1.CapacityTypeOnDemand:
		return p.prices.OnDemandPrice(instanceType)
	}
	return 0, false
}
