// Command joinery-controller runs joinery's controllers (NodeClaim lifecycle, termination,
// disruption, node classes, buffers) in one controller-runtime manager with leader election,
// health probes and a Prometheus metrics endpoint. The command is built by package app, so a
// binary whose disruption simulation runs more scheduler plugins is this main with
// app.WithPlugin options.
package main

import (
	"os"

	"github.com/joinery-dev/joinery/app"
)

func main() {
	if err := app.NewControllerCommand().Execute(); err != nil {
		os.Exit(1)
	}
}
