// Command joinery is joinery's command-line tool (also a kubectl plugin when installed as
// kubectl-joinery): snapshot a cluster, simulate changes offline with the engine the
// binaries run, explain why a pod is pending or a node is not disrupted, and show what each
// NodePool costs. The command is built by package app, so a CLI that simulates more
// scheduler plugins is this main with app.WithPlugin options.
//
// Exit codes: 0 success (simulate: no change), 1 simulate: the cluster would change, 2 error.
package main

import (
	"os"

	"github.com/joinery-dev/joinery/app"
)

func main() {
	os.Exit(app.RunCLI())
}
