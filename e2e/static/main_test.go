// Package static is the e2e suite of static NodePools (spec.replicas) on the local cluster
// with the kwok provider and the StaticCapacity gate on: a static NodePool launches its
// replicas with no pod pending and follows the scale subresource up and down, pods land on
// its nodes without any NodeClaim being added, and its drifted nodes are replaced one at a
// time within the budget and limits.nodes.
package static

import (
	"os"
	"testing"

	"github.com/joinery-dev/joinery/e2e/framework"
)

var env *framework.Env

func TestMain(m *testing.M) {
	// The local cluster's processes inherit the environment: both binaries read the gate.
	os.Setenv("FEATURE_GATES", "StaticCapacity=true")
	os.Exit(framework.Main(m, &env))
}
