package controller

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/joinery-dev/joinery/simulation"
)

// TestSchedulerProfileRefusesUnknownPlugins: a --scheduler-config whose profile enables a
// plugin the binary did not register stops joinery-controller at start with the typed error;
// registered, the profile loads.
func TestSchedulerProfileRefusesUnknownPlugins(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	config := `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: joinery
  plugins:
    filter:
      enabled:
      - name: MaxPerLabel
  pluginConfig:
  - name: MaxPerLabel
    args: {labelKey: app, maxPerNode: 2}
`
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	registered := frameworkruntime.Registry{"MaxPerLabel": func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return nil, nil }}
	tests := []struct {
		name      string
		opts      disruptionOptions
		wantError bool
	}{
		{name: "no configuration: kube-scheduler's default profile", opts: disruptionOptions{schedulerName: "joinery"}},
		{name: "unregistered plugin", opts: disruptionOptions{schedulerConfig: path, schedulerName: "joinery"}, wantError: true},
		{name: "registered plugin", opts: disruptionOptions{schedulerConfig: path, schedulerName: "joinery", outOfTree: registered}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			profile, err := schedulerProfile(tt.opts)
			var unknown *simulation.UnknownPluginsError
			switch {
			case tt.wantError && (!errors.As(err, &unknown) || !slices.Equal(unknown.Plugins, []string{"MaxPerLabel"})):
				t.Fatalf("schedulerProfile = %v, want an *UnknownPluginsError naming MaxPerLabel", err)
			case !tt.wantError && (err != nil || profile == nil):
				t.Fatalf("schedulerProfile = %v, %v", profile, err)
			}
		})
	}
}
