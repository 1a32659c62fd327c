// Package providers turns --cloud-provider into a provider, the one way for the three
// binaries: joinery-controller builds the whole provider, joinery-scheduler and the joinery CLI
// its catalog (Catalog), so all three read the same instance types and prices.
package providers

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/aws"
	"github.com/joinery-dev/joinery/cloudprovider/kwok"
)

// Known are the names --cloud-provider accepts.
var Known = []string{kwok.Name, aws.Name}

// Builders build something of each provider.
type Builders[T any] struct {
	Kwok func() (T, error)
	AWS  func() (T, error)
}

// Choose builds what b builds for the provider named name; a name it does not know is an
// error that lists the known ones.
func Choose[T any](name string, b Builders[T]) (T, error) {
	switch name {
	case kwok.Name:
		return b.Kwok()
	case aws.Name:
		return b.AWS()
	default:
		var zero T
		return zero, fmt.Errorf("unknown --cloud-provider %q (known: %s)", name, strings.Join(Known, ", "))
	}
}

// CatalogFunc builds a provider's catalog over a client, through a NodeOverlay set (nil for
// none).
type CatalogFunc func(c client.Client, overlay cloudprovider.Overlay) (cloudprovider.InstanceTypeLister, error)

// Catalog is the named provider's instance types and prices as joinery-scheduler and the CLI
// read them, without reserved offerings when noReserved (the ReservedCapacity gate off). The
// AWS one loads instance types and prices in the background until ctx ends.
func Catalog(ctx context.Context, name string, settings aws.Settings, noReserved bool) (CatalogFunc, error) {
	return Choose(name, Builders[CatalogFunc]{
		Kwok: func() (CatalogFunc, error) {
			return func(c client.Client, overlay cloudprovider.Overlay) (cloudprovider.InstanceTypeLister, error) {
				p, err := kwok.New(c, kwok.Options{Overlay: overlay, DisableReservedCapacity: noReserved})
				if err != nil {
					return nil, fmt.Errorf("building the kwok cloud provider: %w", err)
				}
				return p, nil
			}, nil
		},
		AWS: func() (CatalogFunc, error) {
			settings.DisableReservedCapacity = noReserved
			newSource, err := aws.NewInstanceTypeSource(ctx, settings, klog.Background().WithName("aws"))
			if err != nil {
				return nil, err
			}
			return func(c client.Client, overlay cloudprovider.Overlay) (cloudprovider.InstanceTypeLister, error) {
				return newSource(c, overlay), nil
			}, nil
		},
	})
}
