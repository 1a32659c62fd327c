// Command joinery-controller is the e2e suite's build of joinery-controller whose disruption
// simulation runs the sample out-of-tree plugin, as the suite's joinery-scheduler does.
package main

import (
	"os"

	"github.com/joinery-dev/joinery/app"
	"github.com/joinery-dev/joinery/e2e/outoftree/maxperlabel"
)

func main() {
	if err := app.NewControllerCommand(app.WithPlugin(maxperlabel.Name, maxperlabel.New)).Execute(); err != nil {
		os.Exit(1)
	}
}
