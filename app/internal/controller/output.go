package controller

import (
	"flag"
	"fmt"
	"net/http"
	"strings"

	uberzap "go.uber.org/zap"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/joinery-dev/joinery/internal/settings"
)

// outputOptions are where the controller's logs go (LOG_OUTPUT_PATHS, LOG_ERROR_OUTPUT_PATHS)
// and whether its metrics server also serves pprof (ENABLE_PROFILING).
type outputOptions struct {
	logOutputPaths      string
	logErrorOutputPaths string
	enableProfiling     bool
}

// bind registers the flags, each defaulting to its setting from the environment.
func (o *outputOptions) bind(fs *flag.FlagSet, env settings.Settings) {
	fs.StringVar(&o.logOutputPaths, "log-output-paths", joinOr(env.LogOutputPaths, settings.DefaultLogOutputPaths), "comma-separated sinks of the JSON log lines: stdout, stderr or file paths (env LOG_OUTPUT_PATHS)")
	fs.StringVar(&o.logErrorOutputPaths, "log-error-output-paths", joinOr(env.LogErrorOutputPaths, settings.DefaultLogErrorOutputPaths), "comma-separated sinks of the logger's own errors, such as a sink it cannot write to (env LOG_ERROR_OUTPUT_PATHS)")
	fs.BoolVar(&o.enableProfiling, "enable-profiling", deref(env.EnableProfiling, false), "serve Go's pprof profiles under /debug/pprof/ on the metrics endpoint, behind its authentication with --metrics-secure (env ENABLE_PROFILING)")
}

// openLogSinks opens the sinks and points zapOpts at them (newLogger applies them). The files
// stay open for the life of the process.
func (o outputOptions) openLogSinks(zapOpts *zap.Options) error {
	outputs, err := settings.ParseLogPaths(o.logOutputPaths)
	if err != nil {
		return fmt.Errorf("--log-output-paths: %w", err)
	}
	errorOutputs, err := settings.ParseLogPaths(o.logErrorOutputPaths)
	if err != nil {
		return fmt.Errorf("--log-error-output-paths: %w", err)
	}
	sinks, err := settings.OpenLogSinks(outputs, errorOutputs)
	if err != nil {
		return err
	}
	zapOpts.DestWriter = sinks.Out
	zapOpts.ZapOpts = append(zapOpts.ZapOpts, uberzap.ErrorOutput(sinks.ErrOut))
	return nil
}

// extraHandlers are the metrics server's handlers beside /metrics: pprof with profiling on.
func (o outputOptions) extraHandlers() map[string]http.Handler {
	if !o.enableProfiling {
		return nil
	}
	return settings.ProfilingHandlers()
}

func joinOr(values []string, def string) string {
	if len(values) == 0 {
		return def
	}
	return strings.Join(values, ",")
}
