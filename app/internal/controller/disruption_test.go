package controller

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/internal/chart"
	"github.com/joinery-dev/joinery/plugin"
	"github.com/joinery-dev/joinery/simulation"
	"github.com/joinery-dev/joinery/simulation/solver"
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
			engine, err := tt.opts.loadEngine()
			var unknown *simulation.UnknownPluginsError
			switch {
			case tt.wantError && (!errors.As(err, &unknown) || !slices.Equal(unknown.Plugins, []string{"MaxPerLabel"})):
				t.Fatalf("loadEngine = %v, want an *UnknownPluginsError naming MaxPerLabel", err)
			case !tt.wantError && (err != nil || engine.Profile == nil):
				t.Fatalf("loadEngine = %v, %v", engine.Profile, err)
			}
		})
	}
}

// TestSimulationPoliciesComeFromTheSchedulerConfig: the chart's scheduler.provisioner values
// reach joinery-controller's disruption simulation through the --scheduler-config it mounts,
// as they reach joinery-scheduler; the environment's settings and the policy flags override
// them only when given.
func TestSimulationPoliciesComeFromTheSchedulerConfig(t *testing.T) {
	files, err := chart.Render(chart.Dir(filepath.Join("..", "..", "..")), chart.Namespace, map[string]any{
		"scheduler": map[string]any{"provisioner": map[string]any{"preferencePolicy": "Ignore", "minValuesPolicy": "BestEffort", "maxInstanceTypes": 17}},
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(schedulerConfigOf(t, files)), 0o644); err != nil {
		t.Fatal(err)
	}
	ignore, respect, strict := solver.PreferenceIgnore, solver.PreferenceRespect, solver.MinValuesStrict
	yes := true
	tests := []struct {
		name      string
		overrides plugin.ArgOverrides
		want      solver.Policies
	}{
		{name: "the chart's values", want: solver.Policies{PreferencePolicy: ignore, MinValuesPolicy: solver.MinValuesBestEffort, MaxInstanceTypes: 17}},
		{name: "an override replaces only its own policy",
			overrides: plugin.ArgOverrides{PreferencePolicy: &respect, MinValuesPolicy: &strict, IgnoreDRARequests: &yes},
			want:      solver.Policies{PreferencePolicy: respect, MinValuesPolicy: strict, MaxInstanceTypes: 17, IgnoreDRARequests: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := disruptionOptions{schedulerConfig: path, schedulerName: "joinery", overrides: tt.overrides}
			engine, err := opts.loadEngine()
			if err != nil {
				t.Fatal(err)
			}
			opts.engine = engine
			if got := opts.simulationOptions(nil, nil, nil, nil).Policies; got != tt.want {
				t.Errorf("disruption simulation policies = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestPolicyFlagsOverrideOnlyWhenGiven: an absent --preference-policy leaves the profile's
// policy alone (the flag has no default of its own); a given one overrides it.
func TestPolicyFlagsOverrideOnlyWhenGiven(t *testing.T) {
	tests := []struct {
		args []string
		want *solver.PreferencePolicy
		dra  *bool
	}{
		{args: nil},
		{args: []string{"--preference-policy=Ignore", "--ignore-dra-requests"}, want: ptr.To(solver.PreferenceIgnore), dra: ptr.To(true)},
	}
	for _, tt := range tests {
		var o plugin.ArgOverrides
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.Var(override[solver.PreferencePolicy]{&o.PreferencePolicy}, "preference-policy", "")
		fs.Var(boolOverride{&o.IgnoreDRARequests}, "ignore-dra-requests", "")
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(o.PreferencePolicy, tt.want) || !reflect.DeepEqual(o.IgnoreDRARequests, tt.dra) {
			t.Errorf("%v: overrides %v %v, want %v %v", tt.args, o.PreferencePolicy, o.IgnoreDRARequests, tt.want, tt.dra)
		}
	}
}

// schedulerConfigOf is the KubeSchedulerConfiguration the chart's ConfigMap holds.
func schedulerConfigOf(t *testing.T, files []chart.File) string {
	t.Helper()
	for _, f := range files {
		if f.Name != "scheduler-config.yaml" {
			continue
		}
		var cm corev1.ConfigMap
		if err := yaml.Unmarshal([]byte(f.Manifest), &cm); err != nil {
			t.Fatal(err)
		}
		return cm.Data["config.yaml"]
	}
	t.Fatal("the chart renders no scheduler-config.yaml")
	return ""
}

// TestPreplannerDoesNotBuildTheSimulation: the AWS provider asks for the Preplanner while
// aws.New runs, before setupDisruption instruments the provider; asking builds nothing (the
// simulation is built once, over the instrumented provider), and a pre-plan before then is an
// error, not a panic.
func TestPreplannerDoesNotBuildTheSimulation(t *testing.T) {
	sim := newDisruptionSimulation(context.Background(), nil, "joinery", disruptionOptions{})
	p, err := sim.preplanner(nil)
	if err != nil {
		t.Fatal(err)
	}
	if sim.simulator != nil || sim.preplan != nil {
		t.Fatal("asking for the Preplanner built the simulation")
	}
	if _, err := p.Preplan(context.Background(), "interruption", &karpv1.NodeClaim{}); err == nil {
		t.Error("Preplan before the simulation is built: no error")
	}
}
