package controller

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/joinery-dev/joinery/internal/settings"
)

// failingWriter refuses every write, as a full disk or a closed pipe does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestLogOutputPaths: the log lines go to --log-output-paths and the logger's own errors (a
// line it could not write) to --log-error-output-paths, not to the failing sink.
func TestLogOutputPaths(t *testing.T) {
	dir := t.TempDir()
	out, errOut := filepath.Join(dir, "out.log"), filepath.Join(dir, "errors.log")
	o := outputOptions{logOutputPaths: out, logErrorOutputPaths: errOut}
	zapOpts := zap.Options{}
	if err := o.openLogSinks(&zapOpts); err != nil {
		t.Fatal(err)
	}
	logger, err := newLogger("info", &zapOpts, false)
	if err != nil {
		t.Fatal(err)
	}
	logger.Info("to the output path")
	if got, _ := os.ReadFile(out); !strings.Contains(string(got), `"message":"to the output path"`) {
		t.Errorf("%s = %q", out, got)
	}

	zapOpts.DestWriter = failingWriter{}
	logger, err = newLogger("info", &zapOpts, false)
	if err != nil {
		t.Fatal(err)
	}
	logger.Info("lost")
	if got, _ := os.ReadFile(errOut); !strings.Contains(string(got), "disk full") {
		t.Errorf("%s = %q, want the write error", errOut, got)
	}
}

// TestOutputFlagsDefaultToTheEnvironment: the settings are the flags' defaults, Karpenter's
// defaults when unset; pprof is served only with profiling on.
func TestOutputFlagsDefaultToTheEnvironment(t *testing.T) {
	yes := true
	tests := []struct {
		name string
		env  settings.Settings
		want outputOptions
	}{
		{name: "unset", want: outputOptions{logOutputPaths: "stdout", logErrorOutputPaths: "stderr"}},
		{
			name: "set",
			env:  settings.Settings{LogOutputPaths: []string{"stdout", "/var/log/j.log"}, LogErrorOutputPaths: []string{"/var/log/e.log"}, EnableProfiling: &yes},
			want: outputOptions{logOutputPaths: "stdout,/var/log/j.log", logErrorOutputPaths: "/var/log/e.log", enableProfiling: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got outputOptions
			got.bind(flag.NewFlagSet("test", flag.ContinueOnError), tt.env)
			if got != tt.want {
				t.Errorf("flags = %+v, want %+v", got, tt.want)
			}
			if handlers := got.extraHandlers(); (handlers["/debug/pprof/"] != nil) != tt.want.enableProfiling {
				t.Errorf("extra handlers %v with profiling %v", handlers, tt.want.enableProfiling)
			}
		})
	}
}
