package scheduler

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/apiserver/pkg/server"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/cli/globalflag"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/component-base/term"
	"k8s.io/component-base/version/verflag"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	"github.com/joinery-dev/joinery/plugin"
)

// newSchedulerCommand is kube-scheduler's command (app.NewSchedulerCommand: the same flags,
// help and run), with one step added between app.Setup and app.Run: the leader election's lock
// is handed to gate, which opens when this process becomes the leader. kube-scheduler builds
// its plugins in Setup, before any election, and offers no hook for them to learn the outcome;
// the Provisioner waits on gate before it plans or publishes anything.
func newSchedulerCommand(gate *plugin.LeaderGate, registryOptions ...app.Option) *cobra.Command {
	opts := options.NewOptions()
	cmd := &cobra.Command{
		Use: "kube-scheduler",
		Long: `joinery-scheduler is kube-scheduler with joinery's Provisioner plugin: pods that fit no
node get NodeClaims planned with the scheduler's own Filters.`,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			// Feature gates must be set before RunE.
			return opts.ComponentGlobalsRegistry.Set()
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCommand(cmd, opts, gate, registryOptions...)
		},
		Args: func(cmd *cobra.Command, args []string) error {
			for _, arg := range args {
				if len(arg) > 0 {
					return fmt.Errorf("%q does not take any arguments, got %q", cmd.CommandPath(), args)
				}
			}
			return nil
		},
	}
	nfs := opts.Flags
	verflag.AddFlags(nfs.FlagSet("global"))
	globalflag.AddGlobalFlags(nfs.FlagSet("global"), cmd.Name(), logs.SkipLoggingConfigurationFlags())
	fs := cmd.Flags()
	for _, f := range nfs.FlagSets {
		fs.AddFlagSet(f)
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, *nfs, cols)
	if err := cmd.MarkFlagFilename("config", "yaml", "yml", "json"); err != nil {
		klog.Background().Error(err, "Failed to mark flag filename")
	}
	return cmd
}

// runCommand is kube-scheduler's own, plus the gate: see newSchedulerCommand.
func runCommand(cmd *cobra.Command, opts *options.Options, gate *plugin.LeaderGate, registryOptions ...app.Option) error {
	verflag.PrintAndExitIfRequested()
	fg := opts.ComponentGlobalsRegistry.FeatureGateFor(basecompatibility.DefaultKubeComponent)
	streams, err := logStreams(cmd)
	if err != nil {
		return err
	}
	if err := logsapi.ValidateAndApplyWithOptions(opts.Logs, streams, fg); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
	cliflag.PrintFlags(cmd.Flags())

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-server.SetupSignalHandler()
		cancel()
	}()

	cc, sched, err := app.Setup(ctx, opts, registryOptions...)
	if err != nil {
		return err
	}
	applyProfiling(cmd, opts, cc)
	if mutable, ok := fg.(featuregate.MutableFeatureGate); ok {
		mutable.AddMetrics()
	}
	opts.ComponentGlobalsRegistry.AddMetrics()

	if cc.LeaderElection != nil {
		cc.LeaderElection.Lock = gate.Observe(cc.LeaderElection.Lock)
	} else {
		gate.Lead()
	}
	return app.Run(ctx, cc, sched)
}
