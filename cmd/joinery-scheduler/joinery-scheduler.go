// Command joinery-scheduler is kube-scheduler with joinery's Provisioner plugin compiled in
// (the out-of-tree plugin convention of sigs.k8s.io/scheduler-plugins). Its flags, config file
// and behaviour are kube-scheduler's, plus --cloud-provider and the AWS provider's flags;
// --version prints joinery's version and the Kubernetes one. The command is built by package
// app, so a binary with more scheduler plugins is this main with app.WithPlugin options.
package main

import (
	"os"

	"k8s.io/component-base/cli"

	"github.com/joinery-dev/joinery/app"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand()))
}
