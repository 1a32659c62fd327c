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
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joinery-dev/joinery/cloudprovider/kwok"
	"github.com/joinery-dev/joinery/internal/version"
	"github.com/joinery-dev/joinery/plugin"
	"github.com/joinery-dev/joinery/plugin/planner"
	"github.com/joinery-dev/joinery/simulation/solver"
)

func main() {
	// The plugin never imports the solver; the binary injects it, with the kwok provider's
	// instance types.
	planners := &planner.Config{
		InstanceTypes:                 kwokInstanceTypes,
		UnavailableOfferingsNamespace: os.Getenv("JOINERY_CONTROLLER_NAMESPACE"),
	}
	plugin.NewPlanner = planners.New
	command := app.NewSchedulerCommand(app.WithPlugin(plugin.Name, plugin.New))
	wrapRun(command, planners)
	os.Exit(cli.Run(command))
}

func kwokInstanceTypes(c client.Client) (solver.InstanceTypeSource, error) {
	provider, err := kwok.New(c, kwok.Options{})
	if err != nil {
		return nil, fmt.Errorf("building the kwok cloud provider: %w", err)
	}
	return provider, nil
}

// wrapRun makes --version report joinery's version (kube-scheduler's own flag prints only the
// Kubernetes one) and gives --config to the planners, which build their framework from it.
func wrapRun(command *cobra.Command, planners *planner.Config) {
	run := command.RunE
	command.RunE = func(cmd *cobra.Command, args []string) error {
		if f := cmd.Flags().Lookup("version"); f != nil && f.Changed && f.Value.String() != "false" {
			fmt.Fprintln(cmd.OutOrStdout(), version.String("joinery-scheduler"))
			return nil
		}
		if f := cmd.Flags().Lookup("config"); f != nil {
			planners.SchedulerConfigPath = f.Value.String()
		}
		return run(cmd, args)
	}
}
