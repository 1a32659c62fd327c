// Package testcluster runs a test binary against one real etcd and kube-apiserver (built by
// `make tools`) with joinery's CRDs installed: the TestMain of every integration suite.
package testcluster

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/joinery-dev/joinery/internal/localcluster"
)

// startTimeout bounds starting etcd and kube-apiserver and installing the CRDs.
const startTimeout = 3 * time.Minute

// Options describe the suite.
type Options struct {
	// Name names the suite in messages and in its temporary folder, e.g. "nodeclass-integration".
	Name string
	// Setup runs once the cluster is up, before the tests, e.g. to build shared clients.
	Setup func(ctx context.Context, c *localcluster.Cluster) error
}

// Main starts the cluster, stores it in *cluster, runs the tests and stops it, returning the
// exit code for os.Exit. A failed run keeps the cluster's logs and says where they are.
func Main(m *testing.M, cluster **localcluster.Cluster, opts Options) int {
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
		fmt.Fprintf(os.Stderr, "the %s tests need etcd and kube-apiserver: %v\nrun `make tools` to build them (or point JOINERY_TOOLS_DIR at them)\n", opts.Name, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "joinery-"+opts.Name+"-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "create cluster dir: %v\n", err)
		return 1
	}

	code := run(m, cluster, opts, root, binDir, dir)
	if code == 0 {
		os.RemoveAll(dir)
	} else {
		fmt.Fprintf(os.Stderr, "cluster logs kept in %s\n", filepath.Join(dir, "logs"))
	}
	return code
}

func run(m *testing.M, cluster **localcluster.Cluster, opts Options, root, binDir, dir string) int {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
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
	defer func() {
		if err := c.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stop the local cluster: %v\n", err)
		}
	}()
	*cluster = c
	if opts.Setup != nil {
		if err := opts.Setup(ctx, c); err != nil {
			fmt.Fprintf(os.Stderr, "set up the %s suite: %v\n", opts.Name, err)
			return 1
		}
	}
	return m.Run()
}
