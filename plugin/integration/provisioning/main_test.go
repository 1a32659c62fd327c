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
	"os"
	"path/filepath"
	"testing"

	"k8s.io/klog/v2"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/joinery-dev/joinery/internal/localcluster"
	"github.com/joinery-dev/joinery/internal/testcluster"
)

// cluster is the package's one control plane, with joinery's CRDs installed; cases run in
// sequence on it, each in its own namespace, and remove their cluster-scoped objects.
var cluster *localcluster.Cluster

// clusterDir holds the cluster's files, and the scheduler configuration the tests write.
var clusterDir string

func TestMain(m *testing.M) {
	crlog.SetLogger(klog.Background())
	os.Exit(testcluster.Main(m, &cluster, testcluster.Options{
		Name: "provisioning-integration",
		Setup: func(_ context.Context, c *localcluster.Cluster) error {
			clusterDir = filepath.Dir(c.LogsDir())
			return nil
		},
	}))
}
