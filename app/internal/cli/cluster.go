package cli

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joinery-dev/joinery/app/internal/providers"
	"github.com/joinery-dev/joinery/cli/snapshot"
	"github.com/joinery-dev/joinery/cli/whatif"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/aws"
	"github.com/joinery-dev/joinery/cloudprovider/kwok"
	"github.com/joinery-dev/joinery/plugin/planner"
)

// clusterFlags say how to reach a live cluster and price its instance types.
type clusterFlags struct {
	kubeconfig    string
	context       string
	cloudProvider string
	namespace     string
	aws           aws.Settings
}

func (f *clusterFlags) bind(root *cobra.Command) {
	fs := root.PersistentFlags()
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default: the usual kubeconfig rules: $KUBECONFIG, ~/.kube/config)")
	fs.StringVar(&f.context, "context", "", "kubeconfig context (default: the current one)")
	fs.StringVar(&f.cloudProvider, "cloud-provider", kwok.Name, "cloud provider whose instance types and prices are recorded: kwok or aws (joinery-controller's --cloud-provider)")
	fs.StringVar(&f.namespace, "controller-namespace", planner.DefaultUnavailableOfferingsNamespace, "namespace of joinery-controller (its unavailable-offerings record)")
	awsFlags := flag.NewFlagSet("aws", flag.ContinueOnError)
	f.aws.BindFlags(awsFlags)
	fs.AddGoFlagSet(awsFlags)
}

// capture reads the live cluster into a snapshot.
func (f *clusterFlags) capture(ctx context.Context) (*snapshot.Snapshot, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: f.context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	scheme, err := whatif.Scheme()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("connecting to the cluster: %w", err)
	}
	source, err := f.instanceTypes(ctx, c)
	if err != nil {
		return nil, err
	}
	return snapshot.Capture(ctx, c, snapshot.CaptureOptions{
		InstanceTypes: source, CloudProvider: f.cloudProvider, Scheme: scheme,
		UnavailableOfferingsNamespace: f.namespace, Now: time.Now(),
	})
}

// instanceTypes builds the provider's catalog as the binaries do, as the provider lists it:
// reserved offerings included and no NodeOverlay applied. The snapshot records the cluster's
// NodeOverlays beside it, and whoever reads the file applies them and the ReservedCapacity
// gate it simulates with (snapshot.Format 2).
func (f *clusterFlags) instanceTypes(ctx context.Context, c client.Client) (cloudprovider.InstanceTypeLister, error) {
	newCatalog, err := providers.Catalog(ctx, f.cloudProvider, f.aws, false)
	if err != nil {
		return nil, err
	}
	return newCatalog(c, nil)
}

// load reads a snapshot file, or captures the live cluster when path is empty.
func (f *clusterFlags) load(ctx context.Context, path string) (*snapshot.Snapshot, error) {
	if path != "" {
		return snapshot.ReadFile(path)
	}
	return f.capture(ctx)
}
