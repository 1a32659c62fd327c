// Package disruption is the e2e suite of the disruption controllers on the local cluster with
// the kwok provider: a scale-down consolidated to the fewest nodes the catalog allows, empty
// nodes removed and WhenEmpty leaving underutilized ones alone, underutilized nodes
// consolidated with PDBs held, a shrunk pod's node replaced by a cheaper type, spot deleted
// but never replaced by spot, drifted NodeClaims replaced with their pods moved first and
// never more disrupting at once than the budget allows, expired NodeClaims replaced,
// do-not-disrupt nodes and blocking PDBs keeping their nodes with the events naming why,
// node repair replacing a node whose Ready went Unknown, and a command whose candidate
// deletes an admission policy refused finishing once they are allowed again.
package disruption

import (
	"os"
	"testing"

	"github.com/joinery-dev/joinery/e2e/framework"
)

var env *framework.Env

func TestMain(m *testing.M) {
	// The local cluster's processes inherit the environment: node repair on, with a short
	// toleration so a node Unknown for 15 s is repaired (the documented one is 30 minutes).
	os.Setenv("FEATURE_GATES", "NodeRepair=true")
	os.Setenv("REPAIR_TOLERATION", "15s")
	os.Setenv("CONSOLIDATION_VALIDATION_DELAY", "5s") // Karpenter's 15 s would only slow the suite
	os.Exit(framework.Main(m, &env))
}
