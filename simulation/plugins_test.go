package simulation

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// TestCheckPlugins: a profile that enables (at any extension point, MultiPoint included) or
// configures a plugin that is neither in-tree nor registered is refused, naming each such
// plugin once and saying how to register it; the Provisioner and registered plugins pass.
func TestCheckPlugins(t *testing.T) {
	registered := frameworkruntime.Registry{
		"Counter": func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return &counter{}, nil },
	}
	tests := []struct {
		name      string
		change    func(p *config.KubeSchedulerProfile)
		outOfTree frameworkruntime.Registry
		unknown   []string
	}{
		{name: "the default profile is all in-tree", change: func(*config.KubeSchedulerProfile) {}},
		{name: "the Provisioner is joinery's own", change: func(p *config.KubeSchedulerProfile) {
			p.Plugins.PostFilter.Enabled = append(p.Plugins.PostFilter.Enabled, config.Plugin{Name: ProvisionerPluginName})
		}},
		{name: "a Filter nobody registered", change: func(p *config.KubeSchedulerProfile) {
			p.Plugins.Filter.Enabled = append(p.Plugins.Filter.Enabled, config.Plugin{Name: "MaxPerLabel"})
		}, unknown: []string{"MaxPerLabel"}},
		{name: "enabled at multiPoint", change: func(p *config.KubeSchedulerProfile) {
			p.Plugins.MultiPoint.Enabled = append(p.Plugins.MultiPoint.Enabled, config.Plugin{Name: "Coscheduling"})
		}, unknown: []string{"Coscheduling"}},
		{name: "only configured", change: func(p *config.KubeSchedulerProfile) {
			p.PluginConfig = append(p.PluginConfig, config.PluginConfig{Name: "CapacityScheduling"})
		}, unknown: []string{"CapacityScheduling"}},
		{name: "each named once, sorted", change: func(p *config.KubeSchedulerProfile) {
			p.Plugins.Filter.Enabled = append(p.Plugins.Filter.Enabled, config.Plugin{Name: "Zeta"}, config.Plugin{Name: "Alpha"})
			p.Plugins.Score.Enabled = append(p.Plugins.Score.Enabled, config.Plugin{Name: "Zeta"})
			p.PluginConfig = append(p.PluginConfig, config.PluginConfig{Name: "Alpha"})
		}, unknown: []string{"Alpha", "Zeta"}},
		{name: "registered out of tree", change: func(p *config.KubeSchedulerProfile) {
			p.Plugins.PreFilter.Enabled = append(p.Plugins.PreFilter.Enabled, config.Plugin{Name: "Counter"})
			p.PluginConfig = append(p.PluginConfig, config.PluginConfig{Name: "Counter"})
		}, outOfTree: registered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			profile, err := DefaultProfile()
			must(t, err)
			profile.SchedulerName = "joinery"
			tt.change(profile)
			err = CheckPlugins(profile, tt.outOfTree)
			var unknown *UnknownPluginsError
			if len(tt.unknown) == 0 {
				if err != nil {
					t.Fatalf("CheckPlugins = %v, want nil", err)
				}
				return
			}
			if !errors.As(err, &unknown) {
				t.Fatalf("CheckPlugins = %v, want an *UnknownPluginsError", err)
			}
			if unknown.Profile != "joinery" || !slices.Equal(unknown.Plugins, tt.unknown) {
				t.Errorf("got profile %q plugins %v, want joinery %v", unknown.Profile, unknown.Plugins, tt.unknown)
			}
			for _, want := range append(slices.Clone(tt.unknown), "app.WithPlugin", `"joinery"`) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("message %q does not name %s", err, want)
				}
			}
		})
	}
}

// TestNewFrameworkRefusesUnknownPlugins: every simulation's framework is built by
// NewFramework, which refuses a profile with an unregistered plugin with the typed error (not
// the framework's bare "does not exist"), and builds it once the plugin is registered.
func TestNewFrameworkRefusesUnknownPlugins(t *testing.T) {
	profile, err := DefaultProfile()
	must(t, err)
	profile.Plugins.PreFilter.Enabled = append(profile.Plugins.PreFilter.Enabled, config.Plugin{Name: "Counter"})
	snapshot, err := NewSnapshot(nil, nil)
	must(t, err)
	client, factory := fakeInformers()
	opts := FrameworkOptions{Client: client, InformerFactory: factory, Snapshot: snapshot}

	_, err = NewFramework(t.Context(), profile, nil, opts)
	var unknown *UnknownPluginsError
	if !errors.As(err, &unknown) || !slices.Equal(unknown.Plugins, []string{"Counter"}) {
		t.Fatalf("NewFramework without the plugin = %v, want an *UnknownPluginsError naming Counter", err)
	}
	c := &counter{}
	fw, err := NewFramework(t.Context(), profile, outOfTree(c), opts)
	if err != nil {
		t.Fatalf("NewFramework with the plugin registered: %v", err)
	}
	if !slices.ContainsFunc(fw.ListPlugins().PreFilter.Enabled, func(p config.Plugin) bool { return p.Name == "Counter" }) {
		t.Errorf("the registered plugin is not among the framework's PreFilters: %v", fw.ListPlugins().PreFilter.Enabled)
	}
}
