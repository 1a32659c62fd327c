package plugin

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/joinery-dev/joinery/simulation"
	"github.com/joinery-dev/joinery/simulation/solver"
)

// TestLoadEngine: the profile and the Provisioner's args come from the configuration file as
// joinery-scheduler decodes them (defaults filled, overrides applied over the file), without
// a file from kube-scheduler's default profile, and an unregistered plugin is refused.
func TestLoadEngine(t *testing.T) {
	dir := t.TempDir()
	write := func(name, config string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	withArgs := write("args.yaml", `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: joinery
  pluginConfig:
  - name: JoineryProvisioner
    args: {preferencePolicy: Ignore, maxInstanceTypes: 7}
`)
	unknown := write("unknown.yaml", `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: joinery
  plugins:
    filter:
      enabled: [{name: NotRegistered}]
`)
	bestEffort := solver.MinValuesBestEffort
	tests := []struct {
		name      string
		path      string
		overrides ArgOverrides
		want      solver.Policies
		unknown   bool
	}{
		{name: "no file: the default profile and args", want: solver.Policies{PreferencePolicy: solver.DefaultPreferencePolicy, MinValuesPolicy: solver.DefaultMinValuesPolicy, MaxInstanceTypes: solver.DefaultMaxInstanceTypes}},
		{name: "the file's args", path: withArgs, want: solver.Policies{PreferencePolicy: solver.PreferenceIgnore, MinValuesPolicy: solver.DefaultMinValuesPolicy, MaxInstanceTypes: 7}},
		{name: "an override over the file's args", path: withArgs, overrides: ArgOverrides{MinValuesPolicy: &bestEffort},
			want: solver.Policies{PreferencePolicy: solver.PreferenceIgnore, MinValuesPolicy: bestEffort, MaxInstanceTypes: 7}},
		{name: "an unregistered plugin", path: unknown, unknown: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			engine, err := LoadEngine(tt.path, "joinery", nil, tt.overrides)
			if tt.unknown {
				var e *simulation.UnknownPluginsError
				if !errors.As(err, &e) {
					t.Fatalf("LoadEngine = %v, want an *UnknownPluginsError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if engine.Profile == nil || engine.Profile.SchedulerName != "joinery" {
				t.Fatalf("profile %+v, want joinery's", engine.Profile)
			}
			if got := engine.Args.Policies(); got != tt.want {
				t.Errorf("policies %+v, want %+v", got, tt.want)
			}
		})
	}
}
