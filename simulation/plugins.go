package simulation

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// UnknownPluginsError is a scheduler profile that enables or configures plugins the simulation
// has no factory for: neither in-tree nor registered with the binary. Simulating without them
// would plan and consolidate with other Filters than the scheduler's, so it is refused.
type UnknownPluginsError struct {
	// Profile is the profile's schedulerName.
	Profile string
	// Plugins are the unknown plugins' names, sorted.
	Plugins []string
}

func (e *UnknownPluginsError) Error() string {
	quoted := make([]string, len(e.Plugins))
	for i, p := range e.Plugins {
		quoted[i] = fmt.Sprintf("%q", p)
	}
	return fmt.Sprintf("scheduler profile %q uses plugins that are neither in-tree nor registered: %s; "+
		"the simulation must run every plugin the scheduler runs, so build this binary with each one "+
		"registered (app.WithPlugin(name, factory) of github.com/joinery-dev/joinery/app, in "+
		"joinery-scheduler, joinery-controller and the joinery CLI alike)",
		e.Profile, strings.Join(quoted, ", "))
}

// CheckPlugins returns an *UnknownPluginsError when profile enables, at any extension point,
// or configures (pluginConfig) a plugin that is neither in-tree nor in outOfTree. The
// Provisioner is always known: it is joinery's own and the simulation never runs it.
func CheckPlugins(profile *config.KubeSchedulerProfile, outOfTree frameworkruntime.Registry) error {
	if profile == nil {
		return nil
	}
	inTree := plugins.NewInTreeRegistry()
	known := func(name string) bool {
		_, in := inTree[name]
		_, out := outOfTree[name]
		return in || out || name == ProvisionerPluginName
	}
	var unknown []string
	add := func(name string) {
		if !known(name) && !slices.Contains(unknown, name) {
			unknown = append(unknown, name)
		}
	}
	for _, set := range pluginSets(profile.Plugins) {
		for _, p := range set.Enabled {
			add(p.Name)
		}
	}
	for _, pc := range profile.PluginConfig {
		add(pc.Name)
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	return &UnknownPluginsError{Profile: profile.SchedulerName, Plugins: unknown}
}

// pluginSets are the profile's extension points (MultiPoint included), found by reflection as
// withoutPlugin finds them, so an extension point a release adds is not missed.
func pluginSets(p *config.Plugins) []*config.PluginSet {
	if p == nil {
		return nil
	}
	var sets []*config.PluginSet
	v := reflect.ValueOf(p).Elem()
	for i := 0; i < v.NumField(); i++ {
		if set, ok := v.Field(i).Addr().Interface().(*config.PluginSet); ok {
			sets = append(sets, set)
		}
	}
	return sets
}
