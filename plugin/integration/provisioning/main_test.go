// Package provisioning runs joinery's provisioning end to end inside one process, against a
// real etcd and kube-apiserver: the Provisioner plugin, built by the scheduler framework, plans
// with the real planner (plugin/planner: the solver, the kwok provider over a small catalog,
// informer-backed cluster state and the unavailable-offerings record). Each case creates
// NodePools, pods and what they depend on (volumes, daemonsets, in-flight NodeClaims), waits
// for the published NodeClaims and checks them, and runs the fidelity check: every NodeClaim,
// as a Node of its cheapest instance type, passes the real Filters for each pod planned onto
// it, and no pod is planned twice.
package provisioning

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/klog/v2"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/joinery-dev/joinery/e2e/localcluster"
)

// cluster is the package's one control plane, with joinery's CRDs installed; cases run in
// sequence on it, each in its own namespace, and remove their cluster-scoped objects.
var cluster *localcluster.Cluster

// clusterDir holds the cluster's files, and the scheduler configuration the tests write.
var clusterDir string

func TestMain(m *testing.M) { os.Exit(runWithCluster(m)) }

func runWithCluster(m *testing.M) int {
	crlog.SetLogger(klog.Background())
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
		fmt.Fprintf(os.Stderr, "provisioning integration tests need etcd and kube-apiserver: %v\nrun `make tools` to build them (or point JOINERY_TOOLS_DIR at them)\n", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "joinery-provisioning-integration-")
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
	cluster, clusterDir = c, dir
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
