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
	// The solver is injected here by setting plugin.NewPlanner once it exists; until then the
	// plugin logs that provisioning is disabled and only reports pods as pending.
	command := app.NewSchedulerCommand(app.WithPlugin(plugin.Name, plugin.New))
	printJoineryVersion(command)
	os.Exit(cli.Run(command))
}

// printJoineryVersion makes --version report joinery's version instead of only the Kubernetes
// one, which kube-scheduler's own flag prints.
func printJoineryVersion(command *cobra.Command) {
	run := command.RunE
	command.RunE = func(cmd *cobra.Command, args []string) error {
		if f := cmd.Flags().Lookup("version"); f != nil && f.Changed && f.Value.String() != "false" {
			fmt.Fprintln(cmd.OutOrStdout(), version.String("joinery-scheduler"))
			return nil
		}
		return run(cmd, args)
	}
}
