package simulation

import (
	"context"
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/interpodaffinity"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
)

// CheckPredicates runs PreFilter (cached per pod and snapshot generation) and the Filters of
// nodeName for pod. It returns nil when the pod fits; otherwise the status names the
// rejecting plugin and its reasons.
func (e *Engine) CheckPredicates(ctx context.Context, pod *corev1.Pod, nodeName string) *fwk.Status {
	pf := e.preFilter(ctx, pod)
	if !pf.status.IsSuccess() {
		return pf.status
	}
	return e.filter(ctx, pf, pod, nodeName, false)
}

// FitsAny returns the first node of nodeNames, in their order, that pod fits. Filters run in
// parallel; nodes after a fitting one are skipped. When no node fits, the status carries
// kube-scheduler's summary ("0/3 nodes are available: ...") and the plugin that rejected the
// first node.
func (e *Engine) FitsAny(ctx context.Context, pod *corev1.Pod, nodeNames []string) (string, *fwk.Status) {
	pf := e.preFilter(ctx, pod)
	if !pf.status.IsSuccess() {
		return "", pf.status
	}
	found, statuses, err := e.firstFit(ctx, pf, pod, nodeNames, false)
	switch {
	case err != nil:
		return "", err
	case found >= 0:
		return nodeNames[found], nil
	}
	return "", summarize(pod, nodeNames, statuses)
}

// FirstFit is FitsAny for callers that need no explanation: it returns the index of the
// first node of nodeNames that pod fits, or -1, and an error only when a plugin failed. When
// spreadRejected is not nil (one entry per node), it marks the nodes before the first fit
// that PodTopologySpread's numbers rejected: they stay rejected while SpreadEpoch(pod) is
// unchanged and their labels are.
func (e *Engine) FirstFit(ctx context.Context, pod *corev1.Pod, nodeNames []string, spreadRejected []bool) (int, error) {
	var marks []Rejection
	if spreadRejected != nil {
		marks = make([]Rejection, len(nodeNames))
	}
	found, err := e.FirstFitMarked(ctx, pod, nodeNames, marks)
	for i, m := range marks {
		spreadRejected[i] = m == RejectedBySpread
	}
	return found, err
}

// Rejection tells how long a rejection FirstFitMarked reports stands.
type Rejection uint8

const (
	// RejectedOther: the node may take the pod once other pods are added (or the node was
	// not evaluated).
	RejectedOther Rejection = iota
	// RejectedBySpread: PodTopologySpread's numbers rejected the node; that stands while
	// SpreadEpoch(pod) and the node's labels are unchanged.
	RejectedBySpread
	// RejectedForGood: a Filter rejected the node that more pods anywhere cannot make accept
	// it — the node's resources or host ports, or the pod's or a placed pod's required
	// anti-affinity; that stands while the node's labels are unchanged and pods are only
	// added.
	RejectedForGood
	// RejectedByAffinity: InterPodAffinity rejected the node for the pod's required pod
	// affinity (no pod a term selects in the node's domain of its topology key). That check
	// reads only the pod's namespace, labels and terms, so it stands for every pod sharing
	// them while the node's labels are unchanged and no pod is added in its domains of the
	// terms' keys, pods being only added (a removal may empty the counts, and a pod that
	// matches its own terms passes anywhere then).
	RejectedByAffinity
)

// FirstFitMarked is FirstFit marking, when marks is not nil (one entry per node), how long
// the rejection of each node before the first fit stands.
func (e *Engine) FirstFitMarked(ctx context.Context, pod *corev1.Pod, nodeNames []string, marks []Rejection) (int, error) {
	pf := e.preFilter(ctx, pod)
	switch {
	case pf.status.Code() == fwk.Error:
		return -1, pf.status.AsError()
	case !pf.status.IsSuccess():
		return -1, nil
	}
	found, statuses, status := e.firstFit(ctx, pf, pod, nodeNames, true)
	if status != nil {
		return -1, status.AsError()
	}
	if marks != nil {
		end := found
		if found < 0 {
			end = len(nodeNames)
		}
		for i := range end {
			marks[i] = rejection(statuses[i])
		}
	}
	return found, nil
}

// rejection classifies a Filter rejection (see Rejection).
func rejection(status *fwk.Status) Rejection {
	if status == viewRejected {
		return RejectedBySpread
	}
	switch status.Plugin() {
	case names.NodeResourcesFit, names.NodePorts:
		return RejectedForGood
	case names.InterPodAffinity:
		for _, reason := range status.Reasons() {
			switch reason {
			case interpodaffinity.ErrReasonAntiAffinityRulesNotMatch, interpodaffinity.ErrReasonExistingAntiAffinityRulesNotMatch:
				return RejectedForGood
			case interpodaffinity.ErrReasonAffinityRulesNotMatch:
				return RejectedByAffinity
			}
		}
	}
	return RejectedOther
}

// firstFit runs the Filters of nodeNames in parallel, skipping nodes after a fitting one. It
// returns the first fitting node's index (or -1) and every node's status (valid until the
// next call: fitBuffers), or the status of a plugin error. With quiet set the rejections'
// statuses may be shared (see filter).
func (e *Engine) firstFit(ctx context.Context, pf *classState, pod *corev1.Pod, nodeNames []string, quiet bool) (int, []*fwk.Status, *fwk.Status) {
	statuses, done := e.fitBuffers(len(nodeNames))
	firstFit := atomic.Int64{}
	firstFit.Store(int64(len(nodeNames)))
	e.forEach(ctx, len(nodeNames), func(i int) {
		if int64(i) > firstFit.Load() {
			return // an earlier node fits already
		}
		statuses[i], done[i] = e.filter(ctx, pf, pod, nodeNames[i], quiet), true
		if statuses[i].IsSuccess() {
			for {
				current := firstFit.Load()
				if int64(i) >= current || firstFit.CompareAndSwap(current, int64(i)) {
					break
				}
			}
		}
	})
	// Every node before the first fitting one was evaluated, so this scan sees them all.
	for i := range nodeNames {
		switch {
		case !done[i]: // the parallelizer stops early only when ctx ends
			return -1, nil, fwk.AsStatus(fmt.Errorf("filtering node %q: %w", nodeNames[i], context.Cause(ctx)))
		case statuses[i].IsSuccess():
			return i, statuses, nil
		case statuses[i].Code() == fwk.Error:
			return -1, nil, statuses[i]
		}
	}
	return -1, statuses, nil
}

// fitBuffers returns firstFit's per-node slices, cleared: the engine's own, reused from call
// to call (a placement scans every node of the cluster, once per pod), so the statuses
// firstFit returns are valid until its next call.
func (e *Engine) fitBuffers(n int) ([]*fwk.Status, []bool) {
	if cap(e.fitStatuses) < n {
		e.fitStatuses, e.fitDone = make([]*fwk.Status, n), make([]bool, n)
	}
	statuses, done := e.fitStatuses[:n], e.fitDone[:n]
	clear(statuses)
	clear(done)
	return statuses, done
}

// FilterNodes returns the Filter status of pod on each of nodeNames (nil where it fits).
func (e *Engine) FilterNodes(ctx context.Context, pod *corev1.Pod, nodeNames []string) []*fwk.Status {
	statuses := make([]*fwk.Status, len(nodeNames))
	pf := e.preFilter(ctx, pod)
	if !pf.status.IsSuccess() {
		for i := range statuses {
			statuses[i] = pf.status
		}
		return statuses
	}
	e.forEach(ctx, len(nodeNames), func(i int) {
		statuses[i] = e.filter(ctx, pf, pod, nodeNames[i], false)
	})
	return statuses
}

// SchedulePod places pod on nodeName as the scheduler would: it checks the Filters, adds the
// pod to the snapshot and runs Reserve, so plugins that keep their own bookkeeping
// (VolumeBinding, DynamicResources) stay consistent with the snapshot. Reverting the layer,
// or resetting the snapshot, runs Unreserve.
func (e *Engine) SchedulePod(ctx context.Context, pod *corev1.Pod, nodeName string) *fwk.Status {
	return e.schedule(ctx, pod, nodeName, true)
}

// ScheduleChecked is SchedulePod for a caller whose Filters check of pod on nodeName
// (CheckPredicates, FitsAny, FirstFit) just passed, with the snapshot unchanged since: it
// skips running the Filters a second time.
func (e *Engine) ScheduleChecked(ctx context.Context, pod *corev1.Pod, nodeName string) *fwk.Status {
	return e.schedule(ctx, pod, nodeName, false)
}

func (e *Engine) schedule(ctx context.Context, pod *corev1.Pod, nodeName string, check bool) *fwk.Status {
	pf := e.preFilter(ctx, pod)
	if !pf.status.IsSuccess() {
		return pf.status
	}
	if check {
		if status := e.filter(ctx, pf, pod, nodeName, false); !status.IsSuccess() {
			return status
		}
	}
	// Reserve may write to the state, which the class's other pods share: it gets a copy,
	// unless every Reserve plugin is known to leave the state of such a pod alone.
	state := pf.state
	if !e.reserveReadOnly || hasReserveSideEffects(pod) {
		state = pf.state.Clone()
	}
	if err := e.snapshot.AddPod(pod, nodeName); err != nil {
		return fwk.AsStatus(err)
	}
	if status := e.fw.RunReservePluginsReserve(ctx, state, pod, nodeName); !status.IsSuccess() {
		e.fw.RunReservePluginsUnreserve(ctx, state, pod, nodeName)
		if err := e.snapshot.RemovePod(pod, nodeName); err != nil {
			return fwk.AsStatus(fmt.Errorf("undoing failed reserve: %w", err))
		}
		return status
	}
	if hasReserveSideEffects(pod) {
		e.snapshot.MarkOpaque()
	}
	undoCtx := context.WithoutCancel(ctx)
	e.snapshot.OnUndo(func() { e.fw.RunReservePluginsUnreserve(undoCtx, state, pod, nodeName) })
	return nil
}

// hasReserveSideEffects reports whether Reserve of pod may change what PreFilter computes for
// other pods: VolumeBinding assumes volumes for its claims, DynamicResources allocates its
// resource claims.
func hasReserveSideEffects(pod *corev1.Pod) bool {
	if len(pod.Spec.ResourceClaims) > 0 {
		return true
	}
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].PersistentVolumeClaim != nil || pod.Spec.Volumes[i].Ephemeral != nil {
			return true
		}
	}
	return false
}

// viewRejected stands for a node PodTopologySpread's numbers reject when the caller only
// needs to know that it was rejected (FirstFit); it never leaves the engine.
var viewRejected = spreadRejection()

// filter runs the Filters of one node, honouring the PreFilter result's node set. quiet
// callers discard rejections, which may then share one status.
func (e *Engine) filter(ctx context.Context, pf *classState, pod *corev1.Pod, nodeName string, quiet bool) *fwk.Status {
	if !pf.result.AllNodes() && !pf.result.NodeNames.Has(nodeName) {
		return preFilterExcluded(pf.pluginsWithNodes)
	}
	nodeInfo, err := e.snapshot.Get(nodeName)
	if err != nil {
		return fwk.AsStatus(err)
	}
	if pf.view != nil && pf.view.rejects(nodeInfo.Node()) {
		if quiet {
			return viewRejected
		}
		return spreadRejection()
	}
	return e.fw.RunFilterPlugins(ctx, pf.state, pod, nodeInfo)
}

// forEach runs work for 0..n-1, in parallel when there is more than one piece.
func (e *Engine) forEach(ctx context.Context, n int, work func(int)) {
	if n == 1 || e.parallelism == 1 {
		for i := range n {
			work(i)
		}
		return
	}
	e.parallelizer.Until(ctx, n, work, "joinerySimulation")
}

// preFilterExcluded is the framework's status for nodes a PreFilterResult left out.
func preFilterExcluded(plugins []string) *fwk.Status {
	msg := fmt.Sprintf("node(s) didn't satisfy plugin(s) %v simultaneously", plugins)
	if len(plugins) == 1 {
		msg = fmt.Sprintf("node(s) didn't satisfy plugin %v", plugins[0])
	}
	status := fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msg)
	if len(plugins) == 1 {
		status.SetPlugin(plugins[0])
	}
	return status
}

// summarize folds per-node rejections into kube-scheduler's FitError message. The code is
// UnschedulableAndUnresolvable only when every node said so.
func summarize(pod *corev1.Pod, nodeNames []string, statuses []*fwk.Status) *fwk.Status {
	diagnosis := framework.Diagnosis{NodeToStatus: framework.NewDefaultNodeToStatus()}
	code := fwk.UnschedulableAndUnresolvable
	for i, status := range statuses {
		diagnosis.NodeToStatus.Set(nodeNames[i], status)
		diagnosis.AddPluginStatus(status)
		if status.Code() != fwk.UnschedulableAndUnresolvable {
			code = fwk.Unschedulable
		}
	}
	fitError := &framework.FitError{Pod: pod, NumAllNodes: len(nodeNames), Diagnosis: diagnosis}
	summary := fwk.NewStatus(code, fitError.Error())
	if len(statuses) > 0 {
		summary.SetPlugin(statuses[0].Plugin())
	}
	return summary
}

func sortedList(s sets.Set[string]) []string {
	if s.Len() == 0 {
		return nil
	}
	return sets.List(s)
}
