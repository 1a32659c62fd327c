// Package buffer is the e2e suite of CapacityBuffers on the local cluster with the kwok
// provider: a buffer gets nodes with no pod pending, a scale-up of its workload lands on that
// capacity at once and the buffer refills, a buffer applied as v1beta1 reads back as
// v1alpha1, and consolidation keeps the buffer's capacity.
package buffer

import (
	"os"
	"testing"

	"github.com/joinery-dev/joinery/e2e/framework"
)

var env *framework.Env

func TestMain(m *testing.M) {
	// The local cluster's processes inherit the environment: both binaries with the gate on.
	os.Setenv("FEATURE_GATES", "CapacityBuffer=true")
	os.Exit(framework.Main(m, &env))
}
