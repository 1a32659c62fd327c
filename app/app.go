// Package app builds joinery's binaries, so that a user can build them with their own
// scheduler plugins, following sigs.k8s.io/scheduler-plugins' convention:
//
//	func main() {
//		os.Exit(cli.Run(app.NewSchedulerCommand(app.WithPlugin(myplugin.Name, myplugin.New))))
//	}
//
// The same options must be given to every binary: a plugin registered with WithPlugin runs in
// kube-scheduler's own framework and in every simulation joinery makes of it (the
// Provisioner's planner in joinery-scheduler, the disruption simulation in joinery-controller,
// the CLI's simulate, explain and cost). joinery-controller and the CLI refuse, at start, a
// scheduler profile that enables or configures a plugin they do not know
// (simulation.UnknownPluginsError), so a binary built without a plugin the scheduler runs
// fails loudly instead of simulating other Filters than the scheduler's.
package app

import (
	"fmt"
	"maps"
	"os"

	"github.com/spf13/cobra"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/joinery-dev/joinery/app/internal/cli"
	"github.com/joinery-dev/joinery/app/internal/controller"
	"github.com/joinery-dev/joinery/app/internal/scheduler"
	"github.com/joinery-dev/joinery/simulation"
)

// Option configures the binaries app builds.
type Option func(*options)

type options struct {
	registry frameworkruntime.Registry
	// err is the first invalid option's, reported when the command is built.
	err error
}

// WithPlugin registers a scheduler plugin besides the in-tree ones, as kube-scheduler's
// app.WithPlugin does: the scheduler profile enables and configures it by name, and its
// factory decodes its args (frameworkruntime.DecodeInto) and builds it, in the scheduler and in
// each simulation.
func WithPlugin(name string, factory frameworkruntime.PluginFactory) Option {
	return func(o *options) {
		if o.registry == nil {
			o.registry = frameworkruntime.Registry{}
		}
		if err := o.registry.Register(name, factory); err != nil && o.err == nil {
			o.err = fmt.Errorf("app.WithPlugin: %w", err)
		}
	}
}

// newOptions applies opts. Registering a name twice, or joinery's own Provisioner's name, is
// an error.
func newOptions(opts []Option) (*options, error) {
	o := &options{}
	for _, opt := range opts {
		opt(o)
	}
	if o.err != nil {
		return nil, o.err
	}
	if _, ok := o.registry[simulation.ProvisionerPluginName]; ok {
		return nil, fmt.Errorf("app.WithPlugin: %q is joinery's own plugin, already registered", simulation.ProvisionerPluginName)
	}
	return o, nil
}

// Registry is the out-of-tree registry opts build: the plugins every simulation runs besides
// the in-tree ones. A user's tests can build frameworks with it.
func Registry(opts ...Option) (frameworkruntime.Registry, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	return maps.Clone(o.registry), nil
}

// NewSchedulerCommand is joinery-scheduler's command (kube-scheduler's, with the Provisioner)
// with the plugins of opts registered; run it with k8s.io/component-base/cli.Run, as
// kube-scheduler runs its own. Invalid options, or invalid settings in the environment (the
// flags' defaults depend on them), end the process with status 2.
func NewSchedulerCommand(opts ...Option) *cobra.Command {
	o := mustOptions(opts)
	return scheduler.NewCommand(o.registry)
}

// NewControllerCommand is joinery-controller's command with the plugins of opts known to its
// disruption simulation. Its flags are Go flags (-flag and --flag alike), parsed by the
// command itself as joinery-controller always has, so --help and the exit codes are its own:
// 2 for an invalid flag or setting, 1 when the controller stops; run it with Execute.
func NewControllerCommand(opts ...Option) *cobra.Command {
	o := mustOptions(opts)
	return &cobra.Command{
		Use:                "joinery-controller",
		Short:              "joinery's controllers: NodeClaim lifecycle, disruption, node classes, buffers",
		DisableFlagParsing: true,
		SilenceUsage:       true,
		Run: func(_ *cobra.Command, args []string) {
			controller.Main(args, o.registry)
		},
	}
}

// RunCLI runs the joinery CLI on the process's arguments, with the plugins of opts known to its
// simulations, and returns its exit code: 0 success (simulate: no change), 1 simulate: the
// cluster would change, 2 error.
func RunCLI(opts ...Option) int {
	o, err := newOptions(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		return 2
	}
	return cli.Run(os.Args[1:], os.Stdout, os.Stderr, o.registry)
}

// mustOptions is newOptions for the commands, which have no error to return: an invalid
// option is a programming error of the binary's main, reported as an invalid setting is.
func mustOptions(opts []Option) *options {
	o, err := newOptions(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	return o
}
