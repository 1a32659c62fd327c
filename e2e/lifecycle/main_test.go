// Package lifecycle is the e2e suite of the NodeClaim lifecycle: a NodeClaim becomes a kwok
// Node that registers and initializes, with the conditions and events Karpenter shows, and
// deleting the NodeClaim removes the Node and the NodeClaim. It also kills joinery-controller
// mid-launch (nothing leaks, nothing launches twice), replaces a node that never registers,
// waits for volume detachment and removes a Node left without its NodeClaim; some tests restart
// joinery-controller with short timers (--gc-interval, --registration-ttl).
package lifecycle

import (
	"os"
	"testing"

	"github.com/joinery-dev/joinery/e2e/framework"
)

var env *framework.Env

func TestMain(m *testing.M) { os.Exit(framework.Main(m, &env)) }
