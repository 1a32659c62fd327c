package aws

import (
	"context"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/go-logr/logr"

	"github.com/joinery-dev/joinery/cloudprovider/aws/instancetype"
	awspricing "github.com/joinery-dev/joinery/cloudprovider/aws/pricing"
	awsprovider "github.com/joinery-dev/joinery/cloudprovider/aws/provider"
	"github.com/joinery-dev/joinery/cloudprovider/aws/zonalshift"
)

// Refresh intervals of the region's instance types and prices. Both change rarely; a failed
// refresh keeps the previous load.
const (
	InstanceTypesRefreshInterval = 12 * time.Hour
	PricesRefreshInterval        = 12 * time.Hour
)

// InstanceTypes are the region's instance types and prices, read the same way by both
// binaries: ec2:DescribeInstanceTypes, ec2:DescribeInstanceTypeOfferings,
// ec2:DescribeSpotPriceHistory and, unless IsolatedVPC, pricing:GetProducts.
type InstanceTypes struct {
	Types  *instancetype.Provider
	Prices *awspricing.Provider
}

// NewInstanceTypes builds the providers on cfg's clients.
func (s *Settings) NewInstanceTypes(cfg awssdk.Config, log logr.Logger) *InstanceTypes {
	ec2Client := ec2.NewFromConfig(cfg)
	var pricingAPI awspricing.PricingAPI
	if !s.IsolatedVPC {
		pricingAPI = pricing.NewFromConfig(cfg, func(o *pricing.Options) { o.Region = PricingRegion(cfg.Region) })
	}
	prices := awspricing.New(pricingAPI, ec2Client, awspricing.Options{Region: cfg.Region, Logger: log.WithName("pricing")})
	overhead := s.VMMemoryOverheadPercent
	types := instancetype.New(ec2Client, prices, instancetype.Options{
		Region:                  cfg.Region,
		VMMemoryOverheadPercent: &overhead,
		ReservedENIs:            s.ReservedENIs,
		DisableReservedCapacity: s.DisableReservedCapacity,
		Logger:                  log.WithName("instancetype"),
	})
	return &InstanceTypes{Types: types, Prices: prices}
}

// Run refreshes prices and instance types until ctx ends. Prices are read when instance types
// are listed, so the two loops are independent.
func (it *InstanceTypes) Run(ctx context.Context) {
	go it.Prices.Run(ctx, PricesRefreshInterval)
	it.Types.Run(ctx, InstanceTypesRefreshInterval)
}

// zonalShifts returns, with ENABLE_ZONAL_SHIFT, a watcher of the cluster's zonal shifts that
// has listed them once (a failure is logged: the zones stay available until a refresh
// succeeds), and nil otherwise. The caller runs its refresh loop.
func (s *Settings) zonalShifts(ctx context.Context, cfg awssdk.Config, log logr.Logger) *zonalshift.Watcher {
	if !s.EnableZonalShift {
		return nil
	}
	w := zonalshift.NewFromConfig(cfg, zonalshift.Options{ClusterName: s.ClusterName, Region: cfg.Region, Logger: log.WithName("zonalshift")})
	if err := w.Refresh(ctx); err != nil {
		log.Error(err, "listing the cluster's zonal shifts; retrying every poll interval", "interval", s.ZonalShiftPollInterval)
	}
	return w
}

// zonalShiftsOf is w as the provider's option: nil stays an untyped nil.
func zonalShiftsOf(w *zonalshift.Watcher) awsprovider.ZonalShifts {
	if w == nil {
		return nil
	}
	return w
}
