package aws

import (
	"context"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/aws/amifamily"
	awsprovider "github.com/joinery-dev/joinery/cloudprovider/aws/provider"
)

// NewInstanceTypeSource is joinery-scheduler's side of the provider: it loads the region's
// instance types and prices in the background until ctx ends, and returns a function that
// builds, on a client, a provider reading EC2NodeClasses (resolved by joinery-controller) and
// listing their instance types with the same code joinery-controller launches from. The
// provider only describes and prices: it is given no launch templates or instances, and every
// caller shares one load of the region's instance types. overlay (nil for none) adjusts them
// (NodeOverlay), as in joinery-controller. With ENABLE_ZONAL_SHIFT it follows the cluster's
// zonal shifts itself, as joinery-controller does, so neither plans into a zone under a shift.
func NewInstanceTypeSource(ctx context.Context, settings Settings, log logr.Logger) (func(c client.Client, overlay cloudprovider.Overlay) *awsprovider.Provider, error) {
	if err := settings.Validate(false); err != nil {
		return nil, err
	}
	cfg, err := settings.AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	log.Info("AWS instance types", "region", cfg.Region, "awsEndpointURL", settings.EndpointURL, "isolatedVPC", settings.IsolatedVPC)
	types := settings.NewInstanceTypes(cfg, log)
	go types.Run(ctx)
	shifts := settings.zonalShifts(ctx, cfg, log)
	if shifts != nil {
		go shifts.Run(ctx, settings.ZonalShiftPollInterval)
	}
	return func(c client.Client, overlay cloudprovider.Overlay) *awsprovider.Provider {
		return awsprovider.New(c, types.Types, nil, nil, awsprovider.Options{
			Cluster:     amifamily.Cluster{Name: settings.ClusterName},
			ZonalShifts: zonalShiftsOf(shifts),
			Logger:      log.WithName("provider"),
			Overlay:     overlay,
		})
	}, nil
}
