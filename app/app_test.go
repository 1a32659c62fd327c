package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/joinery-dev/joinery/cli/fixtures"
	"github.com/joinery-dev/joinery/cli/snapshot"
	"github.com/joinery-dev/joinery/cli/whatif"
	"github.com/joinery-dev/joinery/internal/featuregates"
	"github.com/joinery-dev/joinery/simulation"
)

// refusePods is a user's Filter: it refuses every node to the pods its args name.
type refusePods struct{ pods []string }

const refusePodsName = "RefusePods"

func (*refusePods) Name() string { return refusePodsName }
func (p *refusePods) Filter(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ fwk.NodeInfo) *fwk.Status {
	if slices.Contains(p.pods, pod.Name) {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "refused by "+refusePodsName)
	}
	return nil
}

// newRefusePods is its factory; built counts the plugins it built.
func newRefusePods(built *atomic.Int32) frameworkruntime.PluginFactory {
	return func(_ context.Context, obj runtime.Object, _ fwk.Handle) (fwk.Plugin, error) {
		var args struct {
			Pods []string `json:"pods"`
		}
		if err := frameworkruntime.DecodeInto(obj, &args); err != nil {
			return nil, err
		}
		built.Add(1)
		return &refusePods{pods: args.Pods}, nil
	}
}

// schedulerConfig writes a configuration whose `joinery` profile enables RefusePods for
// inflate-0, a pod of the recorded snapshot that otherwise gets a new NodeClaim.
func schedulerConfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	data := `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: joinery
  plugins:
    multiPoint:
      enabled:
      - name: RefusePods
  pluginConfig:
  - name: RefusePods
    args: {pods: [inflate-0]}
`
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func simulate(t *testing.T, opts whatif.Options) (*whatif.Result, error) {
	t.Helper()
	s, err := snapshot.ReadFile(fixtures.Path())
	if err != nil {
		t.Fatal(err)
	}
	c, err := whatif.Load(s, featuregates.Default())
	if err != nil {
		t.Fatal(err)
	}
	return c.Simulate(t.Context(), opts)
}

func plannedOntoNewNodeClaim(res *whatif.Result, pod string) bool {
	for _, nc := range res.Provisioning.NewNodeClaims {
		if slices.ContainsFunc(nc.Pods, func(p string) bool { return strings.HasSuffix(p, "/"+pod) || p == pod }) {
			return true
		}
	}
	return false
}

// TestWithPluginReachesThePlannersFramework: the registry WithPlugin builds is the one the
// planner's framework runs (planner.Config.OutOfTree, through the CLI's simulation, which
// builds the planner joinery-scheduler builds and the controller's disruption simulation):
// the plugin is built and its Filter keeps inflate-0 from the new NodeClaim it gets without
// the plugin. Without WithPlugin the same configuration is refused, naming the plugin.
func TestWithPluginReachesThePlannersFramework(t *testing.T) {
	without, err := simulate(t, whatif.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !plannedOntoNewNodeClaim(without, "inflate-0") {
		t.Fatalf("without the plugin inflate-0 gets no new NodeClaim; the test needs one: %+v", without.Provisioning)
	}

	config := schedulerConfig(t)
	var built atomic.Int32
	registry, err := Registry(WithPlugin(refusePodsName, newRefusePods(&built)))
	if err != nil {
		t.Fatal(err)
	}
	with, err := simulate(t, whatif.Options{SchedulerConfigPath: config, OutOfTree: registry})
	if err != nil {
		t.Fatal(err)
	}
	if built.Load() == 0 {
		t.Error("the plugin's factory never ran")
	}
	if plannedOntoNewNodeClaim(with, "inflate-0") {
		t.Errorf("inflate-0 planned onto a new NodeClaim although the plugin refuses it every node: %+v", with.Provisioning.NewNodeClaims)
	}
	if !slices.ContainsFunc(with.Provisioning.Pending, func(p whatif.Pending) bool { return strings.HasSuffix(p.Pod, "/inflate-0") }) {
		t.Errorf("inflate-0 is not pending with the plugin: %+v", with.Provisioning.Pending)
	}

	_, err = simulate(t, whatif.Options{SchedulerConfigPath: config})
	var unknown *simulation.UnknownPluginsError
	if !errors.As(err, &unknown) || !slices.Equal(unknown.Plugins, []string{refusePodsName}) {
		t.Errorf("simulating without the plugin registered = %v, want an *UnknownPluginsError naming %s", err, refusePodsName)
	}
}

// TestRegistry: WithPlugin adds each plugin once; a second registration of a name, or one of
// the Provisioner's name, is an error.
func TestRegistry(t *testing.T) {
	var built atomic.Int32
	factory := newRefusePods(&built)
	tests := []struct {
		name    string
		opts    []Option
		want    []string
		wantErr string
	}{
		{name: "none", want: nil},
		{name: "two plugins", opts: []Option{WithPlugin("A", factory), WithPlugin("B", factory)}, want: []string{"A", "B"}},
		{name: "a name twice", opts: []Option{WithPlugin("A", factory), WithPlugin("A", factory)}, wantErr: "named A already exists"},
		{name: "the Provisioner's name", opts: []Option{WithPlugin(simulation.ProvisionerPluginName, factory)}, wantErr: "joinery's own plugin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			registry, err := Registry(tt.opts...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Registry = %v, want an error containing %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for name := range registry {
				names = append(names, name)
			}
			slices.Sort(names)
			if !slices.Equal(names, tt.want) {
				t.Errorf("registry holds %v, want %v", names, tt.want)
			}
		})
	}
}
