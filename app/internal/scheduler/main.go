// Package scheduler is joinery-scheduler: kube-scheduler with joinery's Provisioner plugin
// compiled in (the out-of-tree plugin convention of sigs.k8s.io/scheduler-plugins). Its flags,
// config file and behaviour are kube-scheduler's, plus --cloud-provider and the AWS provider's
// flags; --version prints joinery's version and the Kubernetes one.
package scheduler

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	_ "k8s.io/component-base/logs/json/register" // --logging-format=json
	"k8s.io/component-base/metrics/legacyregistry"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/joinery-dev/joinery/internal/eventlimit"
	"github.com/joinery-dev/joinery/internal/featuregates"
	"github.com/joinery-dev/joinery/internal/settings"
	"github.com/joinery-dev/joinery/internal/version"
	"github.com/joinery-dev/joinery/plugin"
	"github.com/joinery-dev/joinery/plugin/planner"
)

// NewCommand is joinery-scheduler's command, with outOfTree's plugins registered beside the
// Provisioner in kube-scheduler and in the Provisioner's planner, so the plans are made with
// the Filters the scheduler runs. Invalid settings in the environment (the flags' defaults
// depend on them) are printed and end the process with status 2, as joinery-scheduler always
// has.
func NewCommand(outOfTree frameworkruntime.Registry) *cobra.Command {
	// karpenter_build_info beside kube-scheduler's kubernetes_build_info.
	legacyregistry.RawMustRegister(version.BuildInfo)
	// The binary hands the plugin its solver, with the instance types of the cloud provider
	// --cloud-provider names (chosen once flags are parsed).
	planners := &planner.Config{
		UnavailableOfferingsNamespace: os.Getenv("JOINERY_CONTROLLER_NAMESPACE"),
		OutOfTree:                     outOfTree,
	}
	// Only the elected leader provisions: the plugin waits on the gate, which the command opens
	// when this process takes the scheduler's lease (or at once without leader election).
	gate := plugin.NewLeaderGate()
	// Readiness learns when every profile's Provisioner has synced (--readiness-bind-address).
	synced := plugin.NewSyncTracker()
	// Karpenter's gates come from FEATURE_GATES only: --feature-gates is kube-scheduler's flag
	// for Kubernetes's own gates.
	gatesValue, err := featuregates.NewValue(os.Getenv(featuregates.EnvVar))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	gates := gatesValue.Get()
	// Karpenter's settings from the environment: invalid ones stop the scheduler here, each
	// named; the ones set override the plugin args of the scheduler configuration.
	env, err := settings.FromEnv(os.LookupEnv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "invalid settings:", err)
		os.Exit(2)
	}
	provisioner := plugin.New(plugin.Options{NewPlanner: planners.New, Leader: gate, Readiness: synced, FeatureGates: gates, Overrides: plugin.ArgOverrides{
		BatchIdleDuration: env.BatchIdleDuration,
		BatchMaxDuration:  env.BatchMaxDuration,
		PreferencePolicy:  env.PreferencePolicy,
		MinValuesPolicy:   env.MinValuesPolicy,
		IgnoreDRARequests: env.IgnoreDRARequests,
	}, WrapRecorder: eventlimit.Wrap})
	registryOptions := []app.Option{app.WithPlugin(plugin.Name, provisioner)}
	for name, factory := range outOfTree {
		registryOptions = append(registryOptions, app.WithPlugin(name, factory))
	}
	command := newSchedulerCommand(gate, registryOptions...)
	providers := &providerFlags{disableReservedCapacity: !gates.Enabled(featuregates.ReservedCapacity)}
	readiness := &readinessServer{}
	if env.HealthProbePort != nil {
		readiness.address = fmt.Sprintf(":%d", *env.HealthProbePort)
	}
	joineryFlags := flag.NewFlagSet("joinery", flag.ContinueOnError)
	providers.bind(joineryFlags)
	readiness.bind(joineryFlags)
	(&logOutputFlag{}).bind(joineryFlags, env)
	command.Flags().AddGoFlagSet(joineryFlags)
	addHelpSection(command, joineryFlags)
	wrapRun(command, planners, providers, readiness, synced, env)
	return command
}

// wrapRun makes --version report joinery's version (kube-scheduler's own flag prints only the
// Kubernetes one), gives --config to the planners, which build their framework from it, and
// sets up the cloud provider's instance types for as long as the scheduler runs, and serves
// the Provisioner's readiness.
func wrapRun(command *cobra.Command, planners *planner.Config, providers *providerFlags, readiness *readinessServer, synced *plugin.SyncTracker, env settings.Settings) {
	run := command.RunE
	command.RunE = func(cmd *cobra.Command, args []string) error {
		if f := cmd.Flags().Lookup("version"); f != nil && f.Changed && f.Value.String() != "false" {
			fmt.Fprintln(cmd.OutOrStdout(), version.String("joinery-scheduler"))
			return nil
		}
		// LOG_LEVEL sets kube-scheduler's -v unless the command line does.
		if f := cmd.Flags().Lookup("v"); f != nil && !f.Changed && env.LogLevel != nil {
			if err := f.Value.Set(klogVerbosity(*env.LogLevel)); err != nil {
				return fmt.Errorf("LOG_LEVEL: %w", err)
			}
		}
		if err := profilingFromEnv(cmd, env); err != nil {
			return err
		}
		if changed := env.ApplyRuntime(os.LookupEnv); len(changed) > 0 {
			klog.Background().Info("sized the Go runtime from the container's settings", changed...)
		}
		if f := cmd.Flags().Lookup("config"); f != nil {
			planners.SchedulerConfigPath = f.Value.String()
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		instanceTypes, err := providers.instanceTypes(ctx)
		if err != nil {
			return err
		}
		planners.InstanceTypes = instanceTypes
		if err := readiness.serve(ctx, synced); err != nil {
			return err
		}
		return run(cmd, args)
	}
}

// klogVerbosity is LOG_LEVEL as kube-scheduler's -v: debug shows the Provisioner's detail
// (V(4)); info and error show what kube-scheduler logs by default, since klog has no level
// that drops info logs.
func klogVerbosity(level string) string {
	if level == "debug" {
		return "4"
	}
	return "0"
}

// addHelpSection lists joinery's own flags after kube-scheduler's sections in --help, which
// kube-scheduler renders from its own flag sets only.
func addHelpSection(command *cobra.Command, fs *flag.FlagSet) {
	help := command.HelpFunc()
	command.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		help(cmd, args)
		printFlags(cmd.OutOrStdout(), fs)
	})
}

func printFlags(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintln(w, "\njoinery flags:")
	fs.VisitAll(func(f *flag.Flag) {
		fmt.Fprintf(w, "\n      --%s\n            %s", f.Name, f.Usage)
		if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
}
