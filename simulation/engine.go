package simulation

import (
	"context"
	"errors"
	"runtime"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/parallelize"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// Engine answers "does this pod fit that node" with the profile's own plugins over a
// Snapshot. Use it from one goroutine; it runs Filters in parallel itself.
type Engine struct {
	fw           framework.Framework
	snapshot     *Snapshot
	parallelizer parallelize.Parallelizer
	parallelism  int
	preFilters   map[types.UID]*preFiltered
}

// preFiltered is a pod's PreFilter outcome for one snapshot generation.
type preFiltered struct {
	pod              *corev1.Pod // the exact object PreFilter ran on
	generation       uint64
	state            fwk.CycleState
	result           *fwk.PreFilterResult
	status           *fwk.Status
	pluginsWithNodes []string
}

// NewEngine builds the profile's framework over snapshot (see NewFramework for the
// arguments); opts.Snapshot is ignored. ctx bounds the framework's background work, so it
// should live as long as the engine.
func NewEngine(ctx context.Context, snapshot *Snapshot, profile *config.KubeSchedulerProfile, outOfTree frameworkruntime.Registry, opts FrameworkOptions) (*Engine, error) {
	if snapshot == nil {
		return nil, errors.New("engine needs a snapshot")
	}
	opts.Snapshot = snapshot
	fw, err := NewFramework(ctx, profile, outOfTree, opts)
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
		preFilters:   make(map[types.UID]*preFiltered),
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
	clear(e.preFilters)
	return e.snapshot.Reset(nodes, pods)
}

// Forget drops the cached PreFilter outcome of a pod the caller is done with.
func (e *Engine) Forget(pod *corev1.Pod) { delete(e.preFilters, pod.UID) }

// preFilter returns pod's PreFilter outcome for the current snapshot generation, running
// PreFilter only when the snapshot changed since the last run for this pod object. Revert
// restores the generation, so the outcomes of pods not checked inside the fork are reused.
func (e *Engine) preFilter(ctx context.Context, pod *corev1.Pod) *preFiltered {
	generation := e.snapshot.Generation()
	if pf, ok := e.preFilters[pod.UID]; ok && pf.pod == pod && pf.generation == generation {
		return pf
	}
	state := framework.NewCycleState()
	result, status, withNodes := e.fw.RunPreFilterPlugins(ctx, state, pod)
	pf := &preFiltered{
		pod:              pod,
		generation:       generation,
		state:            state,
		result:           result,
		status:           status,
		pluginsWithNodes: sortedList(withNodes),
	}
	e.preFilters[pod.UID] = pf
	return pf
}
