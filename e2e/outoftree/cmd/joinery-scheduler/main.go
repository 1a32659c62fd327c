// Command joinery-scheduler is the e2e suite's build of joinery-scheduler with the sample
// out-of-tree plugin: the ten-line main the README shows.
package main

import (
	"os"

	"k8s.io/component-base/cli"

	"github.com/joinery-dev/joinery/app"
	"github.com/joinery-dev/joinery/e2e/outoftree/maxperlabel"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand(app.WithPlugin(maxperlabel.Name, maxperlabel.New))))
}
