package plugin

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/joinery-dev/joinery/simulation"
	"github.com/joinery-dev/joinery/simulation/solver"
)

// Engine is what a simulation of joinery-scheduler runs with: the profile whose plugins
// decide fits and the Provisioner's args in it. joinery-controller (its --scheduler-config)
// and the CLI (its --scheduler-config) load it with LoadEngine from the file joinery-scheduler
// runs with, so the three plan alike.
type Engine struct {
	Profile *config.KubeSchedulerProfile
	Args    ProvisionerArgs
}

// Policies are the solver policies of the args (solver.Options.WithPolicies).
func (a ProvisionerArgs) Policies() solver.Policies {
	return solver.Policies{
		PreferencePolicy:  a.PreferencePolicy,
		MinValuesPolicy:   a.MinValuesPolicy,
		MaxInstanceTypes:  a.MaxInstanceTypes,
		IgnoreDRARequests: a.IgnoreDRARequests,
	}
}

// LoadEngine reads profile schedulerName of the KubeSchedulerConfiguration at path (empty:
// kube-scheduler's default profile under that name, with the Provisioner's default args) and
// decodes its Provisioner args with overrides applied, as joinery-scheduler's plugin factory
// does. A plugin the profile enables or configures that is neither in-tree nor in outOfTree
// is an *simulation.UnknownPluginsError: a plugin left out would be a silent difference.
func LoadEngine(path, schedulerName string, outOfTree frameworkruntime.Registry, overrides ArgOverrides) (Engine, error) {
	var profile *config.KubeSchedulerProfile
	var err error
	if path == "" {
		if profile, err = simulation.DefaultProfile(); err != nil {
			return Engine{}, err
		}
		profile.SchedulerName = schedulerName
	} else if profile, err = simulation.LoadProfile(path, schedulerName); err != nil {
		return Engine{}, err
	}
	if err := simulation.CheckPlugins(profile, outOfTree); err != nil {
		return Engine{}, withPath(path, err)
	}
	var raw runtime.Object
	for _, pc := range profile.PluginConfig {
		if pc.Name == Name {
			raw = pc.Args
		}
	}
	args, err := DecodeArgsWith(raw, schedulerName, overrides)
	if err != nil {
		return Engine{}, withPath(path, err)
	}
	return Engine{Profile: profile, Args: args}, nil
}

func withPath(path string, err error) error {
	if path == "" {
		return err
	}
	return fmt.Errorf("scheduler configuration %s: %w", path, err)
}
