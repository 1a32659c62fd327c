package scheduler

import (
	"context"
	"flag"

	"github.com/joinery-dev/joinery/app/internal/providers"
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

// instanceTypes returns the planner's instance-type source for the chosen provider
// (providers.Catalog, which the CLI uses too). The AWS one loads instance types and prices in
// the background until ctx ends.
func (p *providerFlags) instanceTypes(ctx context.Context) (planner.InstanceTypesFunc, error) {
	newCatalog, err := providers.Catalog(ctx, p.cloudProvider, p.aws, p.disableReservedCapacity)
	return planner.InstanceTypesFunc(newCatalog), err
}
