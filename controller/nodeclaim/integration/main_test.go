package integration

import (
	"context"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joinery-dev/joinery/apis"
	"github.com/joinery-dev/joinery/internal/localcluster"
	"github.com/joinery-dev/joinery/internal/testcluster"
)

// The package's control plane, started by TestMain with joinery's CRDs installed.
var (
	cluster *localcluster.Cluster
	scheme  = runtime.NewScheme()
	// admin is an uncached client for the tests' own reads and writes.
	admin client.Client
)

func TestMain(m *testing.M) {
	os.Exit(testcluster.Main(m, &cluster, testcluster.Options{
		Name: "nodeclaim-integration",
		Setup: func(ctx context.Context, _ *localcluster.Cluster) error {
			if err := clientgoscheme.AddToScheme(scheme); err != nil {
				return err
			}
			if err := apis.AddToScheme(scheme); err != nil {
				return err
			}
			var err error
			if admin, err = client.New(restConfig(), client.Options{Scheme: scheme}); err != nil {
				return err
			}
			return prepare(ctx)
		},
	}))
}

func restConfig() *rest.Config { return cluster.RESTConfig() }
