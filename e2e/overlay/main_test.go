// Package overlay is the e2e suite of NodeOverlay on the local cluster with the kwok provider
// and the NodeOverlay gate on: an overlay that makes a costlier type cheaper changes which type
// launches (and drifts nothing already running), a capacity overlay adding hugepages-2Mi gets a
// pod requesting it a node where it was pending with the solver's reason, and two
// same-weight overlays that disagree show the Conflict condition.
package overlay

import (
	"os"
	"testing"

	"github.com/joinery-dev/joinery/e2e/framework"
)

var env *framework.Env

func TestMain(m *testing.M) {
	// The local cluster's processes inherit the environment: both binaries read the gate.
	os.Setenv("FEATURE_GATES", "NodeOverlay=true")
	os.Exit(framework.Main(m, &env))
}
