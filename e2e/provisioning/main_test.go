// Package provisioning is the e2e suite of provisioning: pending pods get NodeClaims from
// joinery-scheduler's Provisioner, the NodeClaims become kwok nodes, and the pods run there,
// with no node left empty and no capacity bought twice.
package provisioning

import (
	"os"
	"testing"

	"github.com/joinery-dev/joinery/e2e/framework"
)

var env *framework.Env

func TestMain(m *testing.M) { os.Exit(framework.Main(m, &env)) }
