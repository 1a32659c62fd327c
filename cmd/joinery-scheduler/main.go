// Command joinery-scheduler is kube-scheduler with joinery's Provisioner plugin compiled in
// (the out-of-tree plugin convention of sigs.k8s.io/scheduler-plugins). Its flags, config file
// and behaviour are kube-scheduler's; --version prints joinery's version and the Kubernetes one.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register" // --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/joinery-dev/joinery/internal/version"
	"github.com/joinery-dev/joinery/plugin"
)

func main() {
	// The plugin never imports the solver; the binary injects it.
	plugin.NewPlanner = newPlanner
	command := app.NewSchedulerCommand(app.WithPlugin(plugin.Name, plugin.New))
	wrapRun(command)
	os.Exit(cli.Run(command))
}

// wrapRun makes --version report joinery's version (kube-scheduler's own flag prints only the
// Kubernetes one) and remembers --config, from which the solver builds its framework.
func wrapRun(command *cobra.Command) {
	run := command.RunE
	command.RunE = func(cmd *cobra.Command, args []string) error {
		if f := cmd.Flags().Lookup("version"); f != nil && f.Changed && f.Value.String() != "false" {
			fmt.Fprintln(cmd.OutOrStdout(), version.String("joinery-scheduler"))
			return nil
		}
		if f := cmd.Flags().Lookup("config"); f != nil {
			schedulerConfigPath = f.Value.String()
		}
		return run(cmd, args)
	}
}
