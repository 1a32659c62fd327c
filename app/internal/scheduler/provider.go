package scheduler

import (
	"context"
	"flag"
	"fmt"

	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/aws"
	"github.com/joinery-dev/joinery/cloudprovider/kwok"
	"github.com/joinery-dev/joinery/plugin/planner"
)

// providerFlags choose the cloud provider whose instance types the solver plans with.
type providerFlags struct {
	cloudProvider string
	aws           aws.Settings
	// disableReservedCapacity is the ReservedCapacity feature gate turned off.
	disableReservedCapacity bool
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
		return p.kwokInstanceTypes, nil
	case aws.Name:
		p.aws.DisableReservedCapacity = p.disableReservedCapacity
		return p.awsInstanceTypes(ctx)
	default:
		return nil, fmt.Errorf("unknown --cloud-provider %q (known: %s, %s)", p.cloudProvider, kwok.Name, aws.Name)
	}
}

func (p *providerFlags) kwokInstanceTypes(c client.Client, overlay cloudprovider.Overlay) (cloudprovider.InstanceTypeLister, error) {
	provider, err := kwok.New(c, kwok.Options{Overlay: overlay, DisableReservedCapacity: p.disableReservedCapacity})
	if err != nil {
		return nil, fmt.Errorf("building the kwok cloud provider: %w", err)
	}
	return provider, nil
}

// awsInstanceTypes plans with the AWS provider's instance types (aws.NewInstanceTypeSource).
func (p *providerFlags) awsInstanceTypes(ctx context.Context) (planner.InstanceTypesFunc, error) {
	newProvider, err := aws.NewInstanceTypeSource(ctx, p.aws, klog.Background().WithName("aws"))
	if err != nil {
		return nil, err
	}
	return func(c client.Client, overlay cloudprovider.Overlay) (cloudprovider.InstanceTypeLister, error) {
		return newProvider(c, overlay), nil
	}, nil
}
