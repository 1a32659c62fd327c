// Package cluster is the e2e suite of the cluster itself: every component joinery relies on
// works — kwok nodes, pods, controllers, garbage collection, PDB status — and the local
// cluster stops without leaving anything behind.
package cluster

import (
	"os"
	"testing"

	"github.com/joinery-dev/joinery/e2e/framework"
)

var env *framework.Env

func TestMain(m *testing.M) { os.Exit(framework.Main(m, &env)) }
