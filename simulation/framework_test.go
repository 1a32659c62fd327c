package simulation

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// rejectAll stands in for the Provisioner: a Filter that accepts nothing, so a pod fits only
// if the engine left the plugin out.
type rejectAll struct{}

func (rejectAll) Name() string { return ProvisionerPluginName }
func (rejectAll) Filter(context.Context, fwk.CycleState, *corev1.Pod, fwk.NodeInfo) *fwk.Status {
	return fwk.NewStatus(fwk.Unschedulable, "the provisioner filter ran")
}

// counter is an out-of-tree plugin that counts PreFilter, Reserve and Unreserve calls.
type counter struct {
	preFilters, reserves, unreserves atomic.Int32
}

func (*counter) Name() string { return "Counter" }
func (c *counter) PreFilter(context.Context, fwk.CycleState, *corev1.Pod, []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	c.preFilters.Add(1)
	return nil, nil
}
func (*counter) PreFilterExtensions() fwk.PreFilterExtensions { return nil }
func (c *counter) Reserve(context.Context, fwk.CycleState, *corev1.Pod, string) *fwk.Status {
	c.reserves.Add(1)
	return nil
}
func (c *counter) Unreserve(context.Context, fwk.CycleState, *corev1.Pod, string) {
	c.unreserves.Add(1)
}

func outOfTree(c *counter) frameworkruntime.Registry {
	return frameworkruntime.Registry{
		ProvisionerPluginName: func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return rejectAll{}, nil },
		"Counter":             func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return c, nil },
	}
}

// profileWithOutOfTree is the default profile plus the provisioner and the counter.
func profileWithOutOfTree(t *testing.T) *config.KubeSchedulerProfile {
	t.Helper()
	profile, err := DefaultProfile()
	must(t, err)
	profile.Plugins.Filter.Enabled = append(profile.Plugins.Filter.Enabled, config.Plugin{Name: ProvisionerPluginName})
	profile.Plugins.PreFilter.Enabled = append(profile.Plugins.PreFilter.Enabled, config.Plugin{Name: "Counter"})
	profile.Plugins.Reserve.Enabled = append(profile.Plugins.Reserve.Enabled, config.Plugin{Name: "Counter"})
	return profile
}

func TestNewFrameworkExcludesTheProvisioner(t *testing.T) {
	nodes := []*corev1.Node{testNode("new-1", "4", "8Gi")}
	pod := testPod("web", "1", "1Gi")
	profile := profileWithOutOfTree(t)

	engine := newTestEngine(t, nodes, nil, profile, outOfTree(&counter{}))
	if status := engine.CheckPredicates(t.Context(), pod, "new-1"); !status.IsSuccess() {
		t.Fatalf("the provisioner ran in the engine: %v", status)
	}
	for _, p := range engine.Framework().ListPlugins().Filter.Enabled {
		if p.Name == ProvisionerPluginName {
			t.Fatal("framework lists the provisioner as a Filter")
		}
	}
	if profile.Plugins.Filter.Enabled[len(profile.Plugins.Filter.Enabled)-1].Name != ProvisionerPluginName {
		t.Fatal("NewFramework changed the caller's profile")
	}

	// With nothing excluded the same profile and registry include it: the exclusion is
	// what made the pod fit above.
	snapshot, err := NewSnapshot(nodes, nil)
	must(t, err)
	client, factory := fakeInformers()
	withProvisioner, err := NewEngine(t.Context(), snapshot, profile, outOfTree(&counter{}), FrameworkOptions{Client: client, InformerFactory: factory, Exclude: []string{}})
	must(t, err)
	status := withProvisioner.CheckPredicates(t.Context(), pod, "new-1")
	if status.IsSuccess() || status.Plugin() != ProvisionerPluginName {
		t.Fatalf("with nothing excluded: %v, want rejection by %s", status, ProvisionerPluginName)
	}
}

// With a PreFilter plugin of unknown role (the counter), a class's PreFilter reruns whenever
// the snapshot's content changed since it ran, and is shared by the pods of the class.
func TestPreFilterRunsOncePerClassAndContent(t *testing.T) {
	c := &counter{}
	engine := newTestEngine(t, []*corev1.Node{testNode("new-1", "8", "16Gi"), testNode("new-2", "8", "16Gi")}, nil, profileWithOutOfTree(t), outOfTree(c))
	ctx := t.Context()
	pod := testPod("web", "1", "1Gi", labelled("app", "web"))
	sibling := testPod("web-2", "1", "1Gi", labelled("app", "web"))
	other := testPod("api", "1", "1Gi", labelled("app", "api"))
	check := func(p *corev1.Pod, node string) func() {
		return func() { engine.CheckPredicates(ctx, p, node) }
	}
	steps := []struct {
		name string
		do   func()
		want int32 // PreFilter calls so far
	}{
		{"first check", check(pod, "new-1"), 1},
		{"same content, other node", check(pod, "new-2"), 1},
		{"same content, FitsAny", func() { engine.FitsAny(ctx, pod, []string{"new-1", "new-2"}) }, 1},
		{"a pod of the same class", check(sibling, "new-1"), 1},
		{"other class", check(other, "new-1"), 2},
		{"fork changes nothing", func() { engine.Fork(); check(pod, "new-1")() }, 2},
		{"added node", func() {
			must(t, engine.Snapshot().AddNode(testNode("new-3", "8", "16Gi")))
			check(pod, "new-3")()
		}, 3},
		// The pre-fork content is back: the other class's outcome is valid again; pod's
		// class was computed in the fork, so it runs PreFilter again.
		{"revert, other class", func() { must(t, engine.Revert()); check(other, "new-1")() }, 3},
		{"revert, class checked in the fork", check(pod, "new-1"), 4},
		{"planned pod", func() {
			must(t, engine.Snapshot().AddPod(testPod("planned", "1", "1Gi"), "new-1"))
			check(pod, "new-1")()
		}, 5},
		{"another object of the same class", check(pod.DeepCopy(), "new-1"), 5},
	}
	for _, step := range steps {
		step.do()
		if got := c.preFilters.Load(); got != step.want {
			t.Fatalf("%s: %d PreFilter calls, want %d", step.name, got, step.want)
		}
	}
}

func TestSchedulePodReservesAndRevertUnreserves(t *testing.T) {
	c := &counter{}
	engine := newTestEngine(t, []*corev1.Node{testNode("new-1", "8", "16Gi")}, nil, profileWithOutOfTree(t), outOfTree(c))
	ctx := t.Context()

	engine.Fork()
	if status := engine.SchedulePod(ctx, testPod("a", "1", "1Gi"), "new-1"); !status.IsSuccess() {
		t.Fatal(status)
	}
	if c.reserves.Load() != 1 || c.unreserves.Load() != 0 {
		t.Fatalf("reserves/unreserves = %d/%d, want 1/0", c.reserves.Load(), c.unreserves.Load())
	}
	must(t, engine.Revert())
	if c.unreserves.Load() != 1 {
		t.Fatalf("revert ran Unreserve %d times, want 1", c.unreserves.Load())
	}
	if got := podNames(engine.Snapshot())["new-1"]; len(got) != 0 {
		t.Fatalf("revert left pods %v", got)
	}

	// A committed reservation lasts until the next reset.
	engine.Fork()
	if status := engine.SchedulePod(ctx, testPod("b", "1", "1Gi"), "new-1"); !status.IsSuccess() {
		t.Fatal(status)
	}
	must(t, engine.Commit())
	if c.unreserves.Load() != 1 {
		t.Fatal("commit ran Unreserve")
	}
	must(t, engine.Reset(nil, nil))
	if c.unreserves.Load() != 2 {
		t.Fatalf("reset ran Unreserve %d times in all, want 2", c.unreserves.Load())
	}
}

const twoProfiles = `
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: default-scheduler
- schedulerName: joinery
  plugins:
    multiPoint:
      disabled:
      - name: TaintToleration
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
`

func TestLoadProfile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	must(t, os.WriteFile(path, []byte(twoProfiles), 0o600))

	profile, err := LoadProfile(path, "joinery")
	must(t, err)
	var fitArgs *config.NodeResourcesFitArgs
	var spreadArgs *config.PodTopologySpreadArgs
	for _, pc := range profile.PluginConfig {
		switch args := pc.Args.(type) {
		case *config.NodeResourcesFitArgs:
			fitArgs = args
		case *config.PodTopologySpreadArgs:
			spreadArgs = args
		}
	}
	if fitArgs == nil || fitArgs.ScoringStrategy.Type != config.MostAllocated {
		t.Fatalf("NodeResourcesFit args not carried over: %+v", fitArgs)
	}
	if spreadArgs == nil || spreadArgs.DefaultingType != config.SystemDefaulting {
		t.Fatalf("PodTopologySpread args not defaulted: %+v", spreadArgs)
	}

	// The profile's plugin set is what the engine runs: TaintToleration is off here.
	engine := newTestEngine(t, []*corev1.Node{testNode("gpu-1", "4", "8Gi", withTaint("nvidia.com/gpu", "true"))}, nil, profile, nil)
	if status := engine.CheckPredicates(t.Context(), testPod("web", "1", "1Gi"), "gpu-1"); !status.IsSuccess() {
		t.Fatalf("profile without TaintToleration still rejects: %v", status)
	}

	if _, err := LoadProfile(path, "missing"); err == nil || !strings.Contains(err.Error(), "joinery") {
		t.Fatalf("unknown profile: err = %v, want one listing the profiles", err)
	}
	if _, err := LoadProfile(filepath.Join(dir, "absent.yaml"), "joinery"); err == nil {
		t.Fatal("missing file: no error")
	}
	invalid := strings.Replace(twoProfiles, "leaderElection:", "percentageOfNodesToScore: 150\nleaderElection:", 1)
	must(t, os.WriteFile(path, []byte(invalid), 0o600))
	if _, err := LoadProfile(path, "joinery"); err == nil || !strings.Contains(err.Error(), "percentageOfNodesToScore") {
		t.Fatalf("invalid configuration: err = %v", err)
	}

	// Plugin args are validated by the plugins themselves, when the framework is built.
	badArgs := strings.Replace(twoProfiles, "MostAllocated", "Sideways", 1)
	must(t, os.WriteFile(path, []byte(badArgs), 0o600))
	profile, err = LoadProfile(path, "joinery")
	must(t, err)
	snapshot, err := NewSnapshot(nil, nil)
	must(t, err)
	client, factory := fakeInformers()
	if _, err := NewEngine(t.Context(), snapshot, profile, nil, FrameworkOptions{Client: client, InformerFactory: factory}); err == nil || !strings.Contains(err.Error(), "NodeResourcesFit") {
		t.Fatalf("invalid NodeResourcesFit args: err = %v", err)
	}
}

// The plugins' writes (DynamicResources' Unreserve patches a claim's reservedFor when a
// placement of the pod it is reserved for is reverted) never reach the cluster's client.
func TestPluginWritesNeverReachTheCluster(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	snapshot, err := NewSnapshot([]*corev1.Node{testNode("new-1", "4", "8Gi")}, nil)
	must(t, err)
	profile, err := DefaultProfile()
	must(t, err)
	cluster, factory := fakeInformers()
	engine, err := NewEngine(ctx, snapshot, profile, nil, FrameworkOptions{Client: cluster, InformerFactory: factory})
	must(t, err)
	before := len(cluster.Actions())
	patch := []byte(`{"status": {"reservedFor": [{"$patch": "delete", "uid": "pod-1"}]}}`)
	claims := engine.Framework().ClientSet().ResourceV1().ResourceClaims("default")
	if _, err := claims.Patch(ctx, "gpu", types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatalf("a plugin's write failed: %v", err)
	}
	if err := claims.Delete(ctx, "gpu", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("a plugin's delete failed: %v", err)
	}
	if got := cluster.Actions()[before:]; len(got) != 0 {
		t.Fatalf("the plugins' writes reached the cluster's client: %v", got)
	}
}
