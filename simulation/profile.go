package simulation

import (
	"fmt"
	"os"

	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
)

// ProvisionerPluginName is the name of joinery's scheduler plugin. The engine never runs it:
// the simulation must answer "would the scheduler place this pod here", not provision again.
const ProvisionerPluginName = "JoineryProvisioner"

// LoadProfile reads a KubeSchedulerConfiguration file (any served version, defaulted and
// validated as kube-scheduler does) and returns the profile named schedulerName.
func LoadProfile(path, schedulerName string) (*config.KubeSchedulerProfile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading scheduler configuration: %w", err)
	}
	cfg, err := DecodeConfiguration(data)
	if err != nil {
		return nil, fmt.Errorf("scheduler configuration %s: %w", path, err)
	}
	return ProfileByName(cfg, schedulerName)
}

// DecodeConfiguration decodes a KubeSchedulerConfiguration into the defaulted internal type.
// Decoding into the internal version is what applies kube-scheduler's defaults (default
// plugins, default plugin args).
func DecodeConfiguration(data []byte) (*config.KubeSchedulerConfiguration, error) {
	obj, gvk, err := scheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	cfg, ok := obj.(*config.KubeSchedulerConfiguration)
	if !ok {
		return nil, fmt.Errorf("decoded %s, want KubeSchedulerConfiguration", gvk)
	}
	if err := validation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		return nil, fmt.Errorf("invalid: %w", err)
	}
	return cfg, nil
}

// ProfileByName returns a copy of cfg's profile for schedulerName.
func ProfileByName(cfg *config.KubeSchedulerConfiguration, schedulerName string) (*config.KubeSchedulerProfile, error) {
	names := make([]string, 0, len(cfg.Profiles))
	for i := range cfg.Profiles {
		if cfg.Profiles[i].SchedulerName == schedulerName {
			return cfg.Profiles[i].DeepCopy(), nil
		}
		names = append(names, cfg.Profiles[i].SchedulerName)
	}
	return nil, fmt.Errorf("no scheduler profile %q (profiles: %v)", schedulerName, names)
}

// DefaultProfile returns kube-scheduler's default profile ("default-scheduler"), defaulted.
func DefaultProfile() (*config.KubeSchedulerProfile, error) {
	cfg, err := latest.Default()
	if err != nil {
		return nil, fmt.Errorf("defaulting scheduler configuration: %w", err)
	}
	return cfg.Profiles[0].DeepCopy(), nil
}

// withoutPlugin returns a copy of profile in which plugin name is neither enabled at any
// extension point nor configured. Reflection keeps this right when a release adds an
// extension point (1.36 added PlacementGenerate and PlacementScore).
func withoutPlugin(profile *config.KubeSchedulerProfile, name string) *config.KubeSchedulerProfile {
	out := profile.DeepCopy()
	for _, set := range pluginSets(out.Plugins) {
		set.Enabled = dropPlugin(set.Enabled, name)
	}
	kept := out.PluginConfig[:0]
	for _, pc := range out.PluginConfig {
		if pc.Name != name {
			kept = append(kept, pc)
		}
	}
	out.PluginConfig = kept
	return out
}

func dropPlugin(plugins []config.Plugin, name string) []config.Plugin {
	kept := plugins[:0]
	for _, p := range plugins {
		if p.Name != name {
			kept = append(kept, p)
		}
	}
	return kept
}
