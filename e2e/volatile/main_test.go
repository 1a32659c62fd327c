// Package volatile is the e2e suite of volatile requests on the local cluster with the kwok
// provider: a MutatingAdmissionPolicy stands in for VPA and raises the requests of annotated
// pods on creation; consolidation that would move such a pod on its old requests is rejected
// by the fresh dry-run before any eviction, and afterwards simulates with the raised requests.
package volatile

import (
	"os"
	"testing"

	"github.com/joinery-dev/joinery/e2e/framework"
)

var env *framework.Env

func TestMain(m *testing.M) {
	os.Exit(framework.Main(m, &env))
}
