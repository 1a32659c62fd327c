// Package cli is the e2e suite of the joinery CLI (bin/joinery) on the local cluster: a
// snapshot taken mid-scale-up and simulated offline predicts the NodeClaims the running
// scheduler publishes; explain names why pods are pending and why a node is held; cost sums
// the NodeClaims' launched prices.
package cli

import (
	"os"
	"testing"

	"github.com/joinery-dev/joinery/e2e/framework"
)

var env *framework.Env

func TestMain(m *testing.M) { os.Exit(framework.Main(m, &env)) }
