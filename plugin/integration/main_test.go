// Package integration tests the Provisioner plugin against a real etcd and kube-apiserver:
// NodeClaims published from a plan, events on pods, and no duplicate capacity, also after
// the plugin is rebuilt from the cluster (a scheduler restart). The planner is a test double:
// the solver is tested on its own.
package integration

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/joinery-dev/joinery/e2e/localcluster"
)

// cluster is the package's one control plane, with joinery's CRDs installed.
var cluster *localcluster.Cluster

func TestMain(m *testing.M) { os.Exit(runWithCluster(m)) }

func runWithCluster(m *testing.M) int {
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
		fmt.Fprintf(os.Stderr, "plugin integration tests need etcd and kube-apiserver: %v\nrun `make tools` to build them (or point JOINERY_TOOLS_DIR at them)\n", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "joinery-plugin-integration-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "create cluster dir: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Options{
		BinDir: binDir,
		Dir:    dir,
		CRDDir: filepath.Join(root, "manifests", "crds"),
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "start the local cluster: %v\n", err)
		return 1
	}
	cluster = c
	code := m.Run()
	if err := c.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stop the local cluster: %v\n", err)
		code = 1
	}
	if code == 0 {
		os.RemoveAll(dir)
	} else {
		fmt.Fprintf(os.Stderr, "cluster logs kept in %s\n", filepath.Join(dir, "logs"))
	}
	return code
}

func restConfig() *rest.Config { return cluster.RESTConfig() }
