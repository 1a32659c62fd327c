package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joinery-dev/joinery/apis/karpenter/v1alpha1"
	"github.com/joinery-dev/joinery/app/internal/providers"
	"github.com/joinery-dev/joinery/cli/snapshot"
	"github.com/joinery-dev/joinery/cli/whatif"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/aws"
	"github.com/joinery-dev/joinery/cloudprovider/kwok"
	"github.com/joinery-dev/joinery/internal/featuregates"
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

// instanceTypes builds the provider's catalog as the binaries do: with the NodeOverlay gate on
// (FEATURE_GATES, as for joinery-controller), through the cluster's NodeOverlays, and without
// reserved offerings when ReservedCapacity is off.
func (f *clusterFlags) instanceTypes(ctx context.Context, c client.Client) (cloudprovider.InstanceTypeLister, error) {
	overlay, err := clusterOverlays(ctx, c)
	if err != nil {
		return nil, err
	}
	gates, err := featuregates.FromEnv(os.Getenv(featuregates.EnvVar))
	if err != nil {
		return nil, err
	}
	newCatalog, err := providers.Catalog(ctx, f.cloudProvider, f.aws, !gates.Enabled(featuregates.ReservedCapacity))
	if err != nil {
		return nil, err
	}
	return newCatalog(c, overlay)
}

// clusterOverlays returns the cluster's NodeOverlays when the NodeOverlay gate is on, else nil
// (no overlay), so a snapshot's catalog carries the prices and capacity the binaries use.
func clusterOverlays(ctx context.Context, c client.Client) (cloudprovider.Overlay, error) {
	gates, err := featuregates.FromEnv(os.Getenv(featuregates.EnvVar))
	if err != nil {
		return nil, err
	}
	if !gates.Enabled(featuregates.NodeOverlay) {
		return nil, nil
	}
	var list v1alpha1.NodeOverlayList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing NodeOverlays: %w", err)
	}
	overlays := cloudprovider.NewNodeOverlays()
	overlays.Replace(list.Items)
	return overlays, nil
}

// load reads a snapshot file, or captures the live cluster when path is empty.
func (f *clusterFlags) load(ctx context.Context, path string) (*snapshot.Snapshot, error) {
	if path != "" {
		return snapshot.ReadFile(path)
	}
	return f.capture(ctx)
}
