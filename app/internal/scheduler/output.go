package scheduler

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	logsapi "k8s.io/component-base/logs/api/v1"
	schedulerserverconfig "k8s.io/kubernetes/cmd/kube-scheduler/app/config"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	"github.com/joinery-dev/joinery/internal/settings"
)

// logOutputFlag is LOG_OUTPUT_PATHS as --log-output-paths: where kube-scheduler's loggers
// (klog's text format or --logging-format=json) write, instead of stderr.
type logOutputFlag struct{ paths string }

func (o *logOutputFlag) bind(fs *flag.FlagSet, env settings.Settings) {
	fs.StringVar(&o.paths, "log-output-paths", strings.Join(env.LogOutputPaths, ","), "comma-separated sinks of the log lines: stdout, stderr or file paths (env LOG_OUTPUT_PATHS; default kube-scheduler's stderr)")
}

// logStreams are the streams runCommand hands kube-scheduler's logging configuration: every
// line (info and errors, and with the split-stream options both) to --log-output-paths; nil
// when it is empty, for kube-scheduler's own.
func logStreams(cmd *cobra.Command) (*logsapi.LoggingOptions, error) {
	f := cmd.Flags().Lookup("log-output-paths")
	if f == nil || f.Value.String() == "" {
		return nil, nil
	}
	paths, err := settings.ParseLogPaths(f.Value.String())
	if err != nil {
		return nil, fmt.Errorf("--log-output-paths: %w", err)
	}
	sinks, err := settings.OpenLogSinks(paths, nil)
	if err != nil {
		return nil, err
	}
	return &logsapi.LoggingOptions{ErrorStream: sinks.Out, InfoStream: sinks.Out}, nil
}

// profilingFromEnv sets kube-scheduler's --profiling from ENABLE_PROFILING unless the command
// line gives it.
func profilingFromEnv(cmd *cobra.Command, env settings.Settings) error {
	f := cmd.Flags().Lookup("profiling")
	if f == nil || f.Changed || env.EnableProfiling == nil {
		return nil
	}
	if err := cmd.Flags().Set("profiling", strconv.FormatBool(*env.EnableProfiling)); err != nil {
		return fmt.Errorf("ENABLE_PROFILING: %w", err)
	}
	return nil
}

// applyProfiling makes a --profiling given (or set from ENABLE_PROFILING) decide whether
// /debug/pprof/ is served, over the configuration file's enableProfiling: kube-scheduler
// itself ignores the deprecated flag when --config is given.
func applyProfiling(cmd *cobra.Command, opts *options.Options, cc *schedulerserverconfig.CompletedConfig) {
	if f := cmd.Flags().Lookup("profiling"); f != nil && f.Changed && opts.Deprecated != nil {
		cc.ComponentConfig.EnableProfiling = opts.Deprecated.EnableProfiling
	}
}
