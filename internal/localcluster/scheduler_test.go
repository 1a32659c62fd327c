package localcluster

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// decodeSchedulerConfig decodes a rendered configuration (or fails t on the error rendering
// it) with kube-scheduler's own scheme, and validates it, as joinery-scheduler does at start.
func decodeSchedulerConfig(t *testing.T, data []byte, err error) *config.KubeSchedulerConfiguration {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	obj, _, err := scheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		t.Fatalf("decode:\n%s\n%v", data, err)
	}
	cfg, ok := obj.(*config.KubeSchedulerConfiguration)
	if !ok {
		t.Fatalf("decoded %T", obj)
	}
	if err := validation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		t.Fatalf("invalid: %v", err)
	}
	return cfg
}

// TestSchedulerConfig decodes the rendered file with kube-scheduler's own scheme and
// validation, as joinery-scheduler does at start.
func TestSchedulerConfig(t *testing.T) {
	cases := []struct {
		secondary bool
		want      []string
	}{
		{false, []string{"joinery", "default-scheduler"}},
		{true, []string{"joinery"}},
	}
	for _, tc := range cases {
		data, err := SchedulerConfig("/tmp/kubeconfig", tc.secondary)
		cfg := decodeSchedulerConfig(t, data, err)
		var names []string
		for _, p := range cfg.Profiles {
			names = append(names, p.SchedulerName)
		}
		if !slices.Equal(names, tc.want) {
			t.Errorf("secondary=%v: profiles %v, want %v", tc.secondary, names, tc.want)
		}
		if cfg.LeaderElection.LeaderElect || cfg.ClientConnection.Kubeconfig != "/tmp/kubeconfig" {
			t.Errorf("leader election %v, kubeconfig %q", cfg.LeaderElection.LeaderElect, cfg.ClientConnection.Kubeconfig)
		}
		// The chart's scheduler.kubeClient, not kube-scheduler's 50/100.
		if cfg.ClientConnection.QPS != 200 || cfg.ClientConnection.Burst != 300 {
			t.Errorf("client qps %v burst %v, want 200/300", cfg.ClientConnection.QPS, cfg.ClientConnection.Burst)
		}
	}
}

// TestSchedulerConfigPlugins: Options.SchedulerPlugins are enabled at every extension point
// (multiPoint) of every profile and configured with their args, as an out-of-tree plugin's
// factory decodes them.
func TestSchedulerConfigPlugins(t *testing.T) {
	data, err := SchedulerConfig("/tmp/kubeconfig", false, SchedulerPlugin{Name: "MaxPerLabel", Args: map[string]any{"labelKey": "app", "maxPerNode": 2}})
	cfg := decodeSchedulerConfig(t, data, err)
	for _, p := range cfg.Profiles {
		if !slices.ContainsFunc(p.Plugins.MultiPoint.Enabled, func(pl config.Plugin) bool { return pl.Name == "MaxPerLabel" }) {
			t.Errorf("profile %s: MaxPerLabel not enabled in multiPoint: %v", p.SchedulerName, p.Plugins.MultiPoint.Enabled)
		}
		i := slices.IndexFunc(p.PluginConfig, func(pc config.PluginConfig) bool { return pc.Name == "MaxPerLabel" })
		if i < 0 {
			t.Fatalf("profile %s: no args for MaxPerLabel", p.SchedulerName)
		}
		var args struct {
			LabelKey   string `json:"labelKey"`
			MaxPerNode int    `json:"maxPerNode"`
		}
		if err := frameworkruntime.DecodeInto(p.PluginConfig[i].Args, &args); err != nil || args.LabelKey != "app" || args.MaxPerNode != 2 {
			t.Errorf("profile %s: args %+v (%v), want labelKey app, maxPerNode 2", p.SchedulerName, args, err)
		}
	}
}

// TestPlainSchedulerConfig: without joinery's Provisioner, the profiles run kube-scheduler's
// own plugins only (out-of-tree ones still enabled), and the file is still valid.
func TestPlainSchedulerConfig(t *testing.T) {
	for _, plugins := range [][]SchedulerPlugin{nil, {{Name: "MaxPerLabel"}}} {
		data, err := PlainSchedulerConfig("/tmp/kubeconfig", false, plugins...)
		cfg := decodeSchedulerConfig(t, data, err)
		if len(cfg.Profiles) != 2 {
			t.Fatalf("%d profiles, want joinery and default-scheduler", len(cfg.Profiles))
		}
		for _, p := range cfg.Profiles {
			for point, set := range map[string]config.PluginSet{"preFilter": p.Plugins.PreFilter, "filter": p.Plugins.Filter, "postFilter": p.Plugins.PostFilter, "reserve": p.Plugins.Reserve, "multiPoint": p.Plugins.MultiPoint} {
				if slices.ContainsFunc(set.Enabled, func(pl config.Plugin) bool { return pl.Name == "JoineryProvisioner" }) {
					t.Errorf("profile %s enables JoineryProvisioner at %s", p.SchedulerName, point)
				}
			}
			if !slices.ContainsFunc(p.Plugins.MultiPoint.Enabled, func(pl config.Plugin) bool { return pl.Name == "DefaultPreemption" }) {
				t.Errorf("profile %s: multiPoint %v, want kube-scheduler's defaults", p.SchedulerName, p.Plugins.MultiPoint.Enabled)
			}
			if got := slices.ContainsFunc(p.Plugins.MultiPoint.Enabled, func(pl config.Plugin) bool { return pl.Name == "MaxPerLabel" }); got != (plugins != nil) {
				t.Errorf("profile %s: MaxPerLabel enabled %v, want %v", p.SchedulerName, got, plugins != nil)
			}
		}
	}
}

// TestKwokStages checks the embedded stage file: every document is a kwok Stage with a
// resource and a next step, and the node and pod lifecycles are covered.
func TestKwokStages(t *testing.T) {
	objs, err := DecodeManifests(kwokStages)
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[string][]string{}
	for _, obj := range objs {
		if obj.GetAPIVersion() != "kwok.x-k8s.io/v1alpha1" || obj.GetKind() != "Stage" {
			t.Errorf("%s: %s %s, want a kwok.x-k8s.io/v1alpha1 Stage", obj.GetName(), obj.GetAPIVersion(), obj.GetKind())
		}
		kind, _, _ := unstructured.NestedString(obj.Object, "spec", "resourceRef", "kind")
		if _, ok := obj.Object["spec"].(map[string]any)["next"]; !ok {
			t.Errorf("%s has no next step", obj.GetName())
		}
		byKind[kind] = append(byKind[kind], obj.GetName())
	}
	want := map[string][]string{"Node": {"node-ready", "node-heartbeat"}, "Pod": {"pod-running", "pod-delete"}}
	for kind, names := range want {
		if !slices.Equal(byKind[kind], names) {
			t.Errorf("%s stages %v, want %v", kind, byKind[kind], names)
		}
	}
}
