// Package integration tests the Provisioner plugin against a real etcd and kube-apiserver:
// NodeClaims published from a plan, events on pods, and no duplicate capacity, also after
// the plugin is rebuilt from the cluster (a scheduler restart). The planner is a test double:
// the solver is tested on its own.
package integration

import (
	"os"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/joinery-dev/joinery/internal/localcluster"
	"github.com/joinery-dev/joinery/internal/testcluster"
)

// cluster is the package's one control plane, with joinery's CRDs installed.
var cluster *localcluster.Cluster

func TestMain(m *testing.M) {
	os.Exit(testcluster.Main(m, &cluster, testcluster.Options{Name: "plugin-integration"}))
}

func restConfig() *rest.Config { return cluster.RESTConfig() }
