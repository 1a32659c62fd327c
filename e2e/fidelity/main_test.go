// Package fidelity is the e2e suite of scheduling fidelity: each example of the Scheduling
// page of the specification (seeds/000_ea6cc0ec5bbde25c.txt, "V1.5: Scheduling") becomes a
// row run on the local cluster, and the row checks the intent of the example — which
// NodePool, zone, capacity type and how many nodes — not only that the pods run.
package fidelity

import (
	"os"
	"testing"

	"github.com/joinery-dev/joinery/e2e/framework"
)

var env *framework.Env

func TestMain(m *testing.M) { os.Exit(framework.Main(m, &env)) }
