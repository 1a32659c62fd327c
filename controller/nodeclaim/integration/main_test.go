package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joinery-dev/joinery/apis"
	"github.com/joinery-dev/joinery/e2e/localcluster"
)

// The package's control plane, started by TestMain with joinery's CRDs installed.
var (
	cluster *localcluster.Cluster
	scheme  = runtime.NewScheme()
	// admin is an uncached client for the tests' own reads and writes.
	admin client.Client
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := apis.AddToScheme(scheme); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	root, err := localcluster.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	binDir, err := localcluster.DefaultBinDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := localcluster.CheckBinaries(binDir); err != nil {
		fmt.Fprintf(os.Stderr, "these tests need etcd and kube-apiserver: %v\nrun `make tools` to build them\n", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "joinery-nodeclaim-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Options{BinDir: binDir, Dir: dir, CRDDir: filepath.Join(root, "manifests", "crds")})
	if err != nil {
		fmt.Fprintf(os.Stderr, "start the control plane: %v\n", err)
		return 1
	}
	cluster = c
	code := func() int {
		if admin, err = client.New(restConfig(), client.Options{Scheme: scheme}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := prepare(ctx); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}()
	if err := c.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stop the control plane: %v\n", err)
		code = 1
	}
	if code == 0 {
		os.RemoveAll(dir)
	} else {
		fmt.Fprintf(os.Stderr, "control plane logs kept in %s\n", c.LogsDir())
	}
	return code
}

func restConfig() *rest.Config { return cluster.RESTConfig() }
