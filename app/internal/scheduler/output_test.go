package scheduler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/joinery-dev/joinery/internal/settings"
)

// TestProfilingFromEnv: ENABLE_PROFILING sets kube-scheduler's --profiling (marking it given,
// so it wins over the configuration file) unless the command line gives it.
func TestProfilingFromEnv(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name        string
		args        []string
		env         *bool
		want        string
		wantChanged bool
	}{
		{name: "unset keeps kube-scheduler's default", want: "true"},
		{name: "false turns it off", env: &no, want: "false", wantChanged: true},
		{name: "true", env: &yes, want: "true", wantChanged: true},
		{name: "the command line wins", args: []string{"--profiling=true"}, env: &no, want: "true", wantChanged: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := &cobra.Command{}
			cmd.Flags().Bool("profiling", true, "")
			if err := cmd.Flags().Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			if err := profilingFromEnv(cmd, settings.Settings{EnableProfiling: tt.env}); err != nil {
				t.Fatal(err)
			}
			f := cmd.Flags().Lookup("profiling")
			if f.Value.String() != tt.want || f.Changed != tt.wantChanged {
				t.Errorf("--profiling=%s (given %v), want %s (given %v)", f.Value, f.Changed, tt.want, tt.wantChanged)
			}
		})
	}
}

// TestLogStreams: --log-output-paths becomes both of kube-scheduler's logging streams; empty
// leaves kube-scheduler's own.
func TestLogStreams(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scheduler.log")
	cmd := &cobra.Command{}
	cmd.Flags().String("log-output-paths", "", "")
	if streams, err := logStreams(cmd); err != nil || streams != nil {
		t.Fatalf("empty flag: %+v, %v; want kube-scheduler's streams", streams, err)
	}
	if err := cmd.Flags().Set("log-output-paths", path); err != nil {
		t.Fatal(err)
	}
	streams, err := logStreams(cmd)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []interface{ Write([]byte) (int, error) }{streams.InfoStream, streams.ErrorStream} {
		if _, err := w.Write([]byte("line\n")); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := os.ReadFile(path); string(got) != "line\nline\n" {
		t.Errorf("%s = %q, want both streams' lines", path, got)
	}
	if err := cmd.Flags().Set("log-output-paths", "stdout,,"); err != nil {
		t.Fatal(err)
	}
	if _, err := logStreams(cmd); err == nil || !strings.Contains(err.Error(), "--log-output-paths") {
		t.Errorf("invalid paths: %v, want an error naming --log-output-paths", err)
	}
}
