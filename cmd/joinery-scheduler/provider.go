package main

import (
	"context"
	"flag"
	"fmt"

	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joinery-dev/joinery/cloudprovider/aws/amifamily"
	awsprovider "github.com/joinery-dev/joinery/cloudprovider/aws/provider"
	"github.com/joinery-dev/joinery/cloudprovider/kwok"
	"github.com/joinery-dev/joinery/cmd/internal/awssettings"
	"github.com/joinery-dev/joinery/plugin/planner"
	"github.com/joinery-dev/joinery/simulation/solver"
)

// providerFlags choose the cloud provider whose instance types the solver plans with.
type providerFlags struct {
	cloudProvider string
	aws           awssettings.Settings
}

func (p *providerFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&p.cloudProvider, "cloud-provider", kwok.Name, "cloud provider whose instance types the Provisioner plans with: kwok or aws (the same as joinery-controller's)")
	p.aws.BindFlags(fs)
}

// instanceTypes returns the planner's instance-type source for the chosen provider. The AWS
// one loads instance types and prices in the background until ctx ends.
func (p *providerFlags) instanceTypes(ctx context.Context) (planner.InstanceTypesFunc, error) {
	switch p.cloudProvider {
	case kwok.Name:
		return kwokInstanceTypes, nil
	case awsprovider.Name:
		return p.awsInstanceTypes(ctx)
	default:
		return nil, fmt.Errorf("unknown --cloud-provider %q (known: %s, %s)", p.cloudProvider, kwok.Name, awsprovider.Name)
	}
}

func kwokInstanceTypes(c client.Client) (solver.InstanceTypeSource, error) {
	provider, err := kwok.New(c, kwok.Options{})
	if err != nil {
		return nil, fmt.Errorf("building the kwok cloud provider: %w", err)
	}
	return provider, nil
}

// awsInstanceTypes reads EC2NodeClasses (resolved by joinery-controller) from the API server
// and lists their instance types with the same code joinery-controller launches from. The
// scheduler only describes and prices: it is given no launch templates or instances, and every
// profile shares one load of the region's instance types.
func (p *providerFlags) awsInstanceTypes(ctx context.Context) (planner.InstanceTypesFunc, error) {
	if err := p.aws.Validate(false); err != nil {
		return nil, err
	}
	cfg, err := p.aws.AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	log := klog.Background().WithName("aws")
	log.Info("AWS instance types", "region", cfg.Region, "awsEndpointURL", p.aws.EndpointURL, "isolatedVPC", p.aws.IsolatedVPC)
	types := p.aws.NewInstanceTypes(cfg, log)
	go types.Run(ctx)
	return func(c client.Client) (solver.InstanceTypeSource, error) {
		return awsprovider.New(c, types.Types, nil, nil, awsprovider.Options{
			Cluster: amifamily.Cluster{Name: p.aws.ClusterName},
			Logger:  log.WithName("provider"),
		}), nil
	}, nil
}
