package settings

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"net/url"
	"path/filepath"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Default log sinks, Karpenter's: log lines on stdout, the logger's own errors on stderr.
const (
	DefaultLogOutputPaths      = "stdout"
	DefaultLogErrorOutputPaths = "stderr"
)

// ParseLogPaths splits a comma-separated list of log sinks: "stdout", "stderr", file paths
// (created if missing, appended to) or file:// URLs, as zap opens them. An empty entry or
// another URL scheme is refused, so a typo stops the binary instead of losing its logs.
func ParseLogPaths(v string) ([]string, error) {
	var paths []string
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, errors.New("empty path in the comma-separated list")
		}
		if strings.ContainsRune(p, 0) {
			return nil, fmt.Errorf("%q: a path cannot hold a NUL byte", p)
		}
		// zap opens an absolute path as it is and parses anything else as a URL.
		if !filepath.IsAbs(p) {
			u, err := url.Parse(p)
			if err != nil || (u.Scheme != "" && u.Scheme != "file") {
				return nil, fmt.Errorf("%q: only stdout, stderr, file paths and file:// URLs are log sinks", p)
			}
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// LogSinks are opened log destinations: Out takes the log lines, ErrOut the logger's own
// failures.
type LogSinks struct {
	Out, ErrOut zapcore.WriteSyncer
	closers     []func()
}

// OpenLogSinks opens outputs and errorOutputs (each as ParseLogPaths returns them; empty for
// the defaults). An error names the setting whose sink could not be opened.
func OpenLogSinks(outputs, errorOutputs []string) (*LogSinks, error) {
	if len(outputs) == 0 {
		outputs = []string{DefaultLogOutputPaths}
	}
	if len(errorOutputs) == 0 {
		errorOutputs = []string{DefaultLogErrorOutputPaths}
	}
	out, closeOut, err := zap.Open(outputs...)
	if err != nil {
		return nil, fmt.Errorf("LOG_OUTPUT_PATHS=%q: %w", strings.Join(outputs, ","), err)
	}
	errOut, closeErr, err := zap.Open(errorOutputs...)
	if err != nil {
		closeOut()
		return nil, fmt.Errorf("LOG_ERROR_OUTPUT_PATHS=%q: %w", strings.Join(errorOutputs, ","), err)
	}
	return &LogSinks{Out: out, ErrOut: errOut, closers: []func(){closeOut, closeErr}}, nil
}

// Close syncs and closes the files the sinks opened.
func (s *LogSinks) Close() {
	_ = s.Out.Sync()
	_ = s.ErrOut.Sync()
	for _, c := range s.closers {
		c()
	}
}

// ProfilingHandlers are net/http/pprof's handlers under /debug/pprof/, for a metrics server's
// extra handlers when ENABLE_PROFILING is true (the index serves every named profile: heap,
// goroutine, allocs, block, mutex, threadcreate).
func ProfilingHandlers() map[string]http.Handler {
	return map[string]http.Handler{
		"/debug/pprof/":        http.HandlerFunc(pprof.Index),
		"/debug/pprof/cmdline": http.HandlerFunc(pprof.Cmdline),
		"/debug/pprof/profile": http.HandlerFunc(pprof.Profile),
		"/debug/pprof/symbol":  http.HandlerFunc(pprof.Symbol),
		"/debug/pprof/trace":   http.HandlerFunc(pprof.Trace),
	}
}
