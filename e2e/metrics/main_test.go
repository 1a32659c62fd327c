// Package metrics is the e2e suite of joinery's Prometheus metrics and logs: after a scale-up,
// a drain, a drift, a failed launch and pods left waiting on the local cluster, both binaries
// serve Karpenter's metrics with Karpenter's names, types and labels, every karpenter_* family
// they serve is the one docs/metrics.md lists, and joinery-controller's logs carry Karpenter's
// keys.
package metrics

import (
	"os"
	"testing"

	"github.com/joinery-dev/joinery/e2e/framework"
)

var env *framework.Env

func TestMain(m *testing.M) { os.Exit(framework.Main(m, &env)) }
