package simulation

import (
	"context"
	"errors"
	"runtime"
	"slices"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/parallelize"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// Engine answers "does this pod fit that node" with the profile's own plugins over a
// Snapshot. Use it from one goroutine; it runs Filters in parallel itself.
type Engine struct {
	fw           framework.Framework
	snapshot     *Snapshot
	parallelizer parallelize.Parallelizer
	parallelism  int

	preFilterPlugins []preFilterPlugin
	// followed are the PreFilter plugins a change of the snapshot concerns (followedPlugins).
	followed []preFilterPlugin
	// rolesKnown: every PreFilter plugin has a known role, so states can follow changes.
	rolesKnown bool
	// spreadPlugin: PodTopologySpread is one of them.
	spreadPlugin bool
	// reserveReadOnly: every Reserve plugin is an in-tree one that, for a pod without volumes
	// and resource claims, changes nothing in the cycle state that another pod of the class
	// would see (VolumeBinding only notes that all volumes are bound), so SchedulePod need
	// not copy the state.
	reserveReadOnly bool
	classes         map[string]*classState
	keys            map[*corev1.Pod]string
	// shares holds, per preFilterShareKey, the class that lends that plugin state to
	// classes computing it; busy are the classes being brought up to date, which lend
	// nothing meanwhile. isolated turns the sharing off.
	shares   map[string]*classState
	busy     map[string]bool
	isolated bool
	// fullAffinityScan gives InterPodAffinity's PreFilter every node (preFilterNodes), for
	// tests that compare.
	fullAffinityScan bool
	stats            preFilterStats
	// fitStatuses and fitDone are firstFit's buffers (fitBuffers).
	fitStatuses []*fwk.Status
	fitDone     []bool
	epochs      uint64 // last stable epoch handed out (classState.stableEpoch)
}

// NewEngine builds the profile's framework over snapshot (see NewFramework for the
// arguments); opts.Snapshot is ignored. ctx bounds the framework's background work, so it
// should live as long as the engine.
func NewEngine(ctx context.Context, snapshot *Snapshot, profile *config.KubeSchedulerProfile, outOfTree frameworkruntime.Registry, opts FrameworkOptions) (*Engine, error) {
	if snapshot == nil {
		return nil, errors.New("engine needs a snapshot")
	}
	opts.Snapshot = snapshot
	fw, built, err := newFramework(ctx, profile, outOfTree, opts)
	if err != nil {
		return nil, err
	}
	preFilterPlugins, rolesKnown, err := preFilterPluginsOf(fw, built)
	if err != nil {
		return nil, err
	}
	parallelism := opts.Parallelism
	if parallelism <= 0 {
		parallelism = max(runtime.GOMAXPROCS(0), 2)
	}
	return &Engine{
		fw:           fw,
		snapshot:     snapshot,
		parallelizer: parallelize.NewParallelizer(parallelism),
		parallelism:  parallelism,

		preFilterPlugins: preFilterPlugins,
		followed:         followedPlugins(preFilterPlugins),
		rolesKnown:       rolesKnown,
		spreadPlugin:     slices.ContainsFunc(preFilterPlugins, func(p preFilterPlugin) bool { return p.role == roleSpread }),
		reserveReadOnly: !slices.ContainsFunc(fw.ListPlugins().Reserve.Enabled, func(p config.Plugin) bool {
			return p.Name != names.VolumeBinding && p.Name != names.DynamicResources
		}),
		classes:  map[string]*classState{},
		keys:     map[*corev1.Pod]string{},
		shares:   map[string]*classState{},
		busy:     map[string]bool{},
		isolated: opts.IsolatedPreFilter,
		stats:    preFilterStats{ran: map[string]int{}, shared: map[string]int{}},
	}, nil
}

// Framework is the engine's framework, for callers that need another extension point.
func (e *Engine) Framework() framework.Framework { return e.fw }

// Snapshot is the state the engine checks against; change it directly to add hypothetical
// nodes or planned pods without running Reserve.
func (e *Engine) Snapshot() *Snapshot { return e.snapshot }

// Fork, Revert and Commit delegate to the snapshot; Reserve done by SchedulePod in a
// reverted layer is undone with Unreserve.
func (e *Engine) Fork() { e.snapshot.Fork() }

// Revert undoes the changes since the last Fork.
func (e *Engine) Revert() error { return e.snapshot.Revert() }

// Commit keeps the changes since the last Fork.
func (e *Engine) Commit() error { return e.snapshot.Commit() }

// Reset loads new cluster state into the snapshot, undoing every reservation first.
func (e *Engine) Reset(nodes []*corev1.Node, pods []*corev1.Pod) error {
	clear(e.classes)
	clear(e.keys)
	clear(e.shares)
	return e.snapshot.Reset(nodes, pods)
}

// Forget drops the cached class key of a pod object the caller is done with; the PreFilter
// state of its class stays for the class's other pods.
func (e *Engine) Forget(pod *corev1.Pod) { delete(e.keys, pod) }
