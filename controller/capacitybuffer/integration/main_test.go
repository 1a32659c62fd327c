// Package integration runs the CapacityBuffer controller against a real kube-apiserver: the
// status it writes for each kind of reference and sizing, and its reaction to workload changes.
package integration

import (
	"context"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/joinery-dev/joinery/apis"
	"github.com/joinery-dev/joinery/controller/capacitybuffer"
	"github.com/joinery-dev/joinery/internal/localcluster"
	"github.com/joinery-dev/joinery/internal/testcluster"
)

var (
	cluster *localcluster.Cluster
	scheme  = runtime.NewScheme()
	admin   client.Client
)

func TestMain(m *testing.M) {
	os.Exit(testcluster.Main(m, &cluster, testcluster.Options{
		Name: "capacitybuffer-integration",
		Setup: func(ctx context.Context, _ *localcluster.Cluster) error {
			if err := clientgoscheme.AddToScheme(scheme); err != nil {
				return err
			}
			if err := apis.AddToScheme(scheme); err != nil {
				return err
			}
			var err error
			admin, err = client.New(cluster.RESTConfig(), client.Options{Scheme: scheme})
			return err
		},
	}))
}

// startController runs the buffer controller in a manager of its own until the test ends.
func startController(t *testing.T) {
	t.Helper()
	mgr, err := ctrl.NewManager(cluster.RESTConfig(), ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		// Each test runs its own manager with the same controller.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := capacitybuffer.New(mgr.GetClient(), nil, nil).SetupWithManager(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}
