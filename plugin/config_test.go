package plugin

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	"sigs.k8s.io/yaml"

	"github.com/joinery-dev/joinery/internal/localcluster"
	"github.com/joinery-dev/joinery/simulation"
)

// TestSchedulerConfigurations builds a framework from every scheduler configuration joinery
// ships, as kube-scheduler does, and checks the Provisioner runs before DefaultPreemption at
// PostFilter, at Reserve, and that its args decode.
func TestSchedulerConfigurations(t *testing.T) {
	deployed := readDeployedConfig(t)
	local, err := localcluster.SchedulerConfig("/tmp/kubeconfig", false)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"manifests/deploy": deployed, "local cluster": local} {
		cfg, err := simulation.DecodeConfiguration(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i := range cfg.Profiles {
			checkProfile(t, name, &cfg.Profiles[i])
		}
	}
}

func checkProfile(t *testing.T, source string, profile *config.KubeSchedulerProfile) {
	t.Helper()
	registry := plugins.NewInTreeRegistry()
	err := registry.Register(Name, func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		args, err := DecodeArgs(obj, h.ProfileName())
		if err != nil {
			return nil, err
		}
		return newPlugin(ctx, args, h.ProfileName(), dependencies{}), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	metrics.Register() // the framework instruments its plugins with the scheduler's metrics
	client := fake.NewClientset()
	fw, err := frameworkruntime.NewFramework(t.Context(), registry, profile,
		frameworkruntime.WithClientSet(client),
		frameworkruntime.WithInformerFactory(informers.NewSharedInformerFactory(client, 0)),
		frameworkruntime.WithSnapshotSharedLister(schedcache.NewEmptySnapshot()))
	if err != nil {
		t.Fatalf("%s, profile %s: %v", source, profile.SchedulerName, err)
	}
	enabled := fw.ListPlugins()
	names := func(plugins []config.Plugin) []string {
		var out []string
		for _, p := range plugins {
			out = append(out, p.Name)
		}
		return out
	}
	// DynamicResources may come first: it returns only Unschedulable or Error, never
	// UnschedulableAndUnresolvable, so it cannot end the chain before the Provisioner.
	postFilter := names(enabled.PostFilter.Enabled)
	ours, preemption := slices.Index(postFilter, Name), slices.Index(postFilter, "DefaultPreemption")
	if ours < 0 || preemption < 0 || ours > preemption {
		t.Errorf("%s, profile %s: PostFilter plugins %v; want %s, then DefaultPreemption", source, profile.SchedulerName, postFilter, Name)
	}
	if got := names(enabled.Reserve.Enabled); !slices.Contains(got, Name) {
		t.Errorf("%s, profile %s: Reserve plugins %v lack %s", source, profile.SchedulerName, got, Name)
	}
}

// readDeployedConfig returns the KubeSchedulerConfiguration in the scheduler's ConfigMap.
func readDeployedConfig(t *testing.T) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "manifests", "deploy", "scheduler-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(raw, &cm); err != nil {
		t.Fatal(err)
	}
	data, ok := cm.Data["config.yaml"]
	if !ok {
		t.Fatal("the ConfigMap has no config.yaml")
	}
	return []byte(data)
}
