package simulation

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
)

// PreFilter states are cached per equivalence class (EquivalenceKey) and follow the snapshot:
// when it changes, the changes since a state was computed (the snapshot's log) are replayed
// onto it with the plugins' own PreFilterExtensions, the mechanism kube-scheduler's
// preemption uses, instead of rerunning PreFilter over the whole cluster for every pod. A
// reverted fork is rolled back the same way. What the extensions cannot follow is recomputed
// by rerunning the plugin's PreFilter, or every PreFilter.

// pluginRole says how a PreFilter plugin's state follows a change of the snapshot.
type pluginRole uint8

const (
	// roleUnknown: nothing is known about the plugin; any change reruns every PreFilter.
	roleUnknown pluginRole = iota
	// rolePure: the state depends on the pod and on cluster objects outside the snapshot
	// only, or on Reserve side effects that the engine logs as opaque changes.
	rolePure
	// roleExtended: AddPod and RemovePod keep the state exact.
	roleExtended
	// roleSpread: PodTopologySpread. RemovePod is exact, but AddPod is not over a sequence of
	// pods: it keeps only two "critical paths", so after pods land in both, a third domain
	// with fewer pods is missed as the minimum. Its PreFilter reruns on its own after a
	// matching pod is added. An empty node is added as the plugin's PreFilter would count it,
	// with the pod added to it and removed again (a domain with zero pods).
	roleSpread
)

var pluginRoles = map[string]pluginRole{
	names.NodeAffinity:         rolePure,
	names.NodePorts:            rolePure,
	names.NodeResourcesFit:     rolePure,
	names.NodeVolumeLimits:     rolePure,
	names.VolumeZone:           rolePure,
	names.VolumeBinding:        rolePure,
	names.DynamicResources:     rolePure,
	names.NodeDeclaredFeatures: rolePure,
	names.InterPodAffinity:     roleExtended,
	names.VolumeRestrictions:   roleExtended,
	names.PodTopologySpread:    roleSpread,
}

// preFilterPlugin is a PreFilter plugin of the engine's framework, in the framework's order.
type preFilterPlugin struct {
	name   string
	role   pluginRole
	plugin fwk.PreFilterPlugin
}

// classState is the PreFilter outcome of one equivalence class, valid for the snapshot's
// content up to log entry at.
type classState struct {
	key string      // the class's EquivalenceKey
	pod *corev1.Pod // the pod PreFilter ran on; its class shares the state
	// standIn is spread.standIn's PodInfo, for addDomain.
	standIn fwk.PodInfo
	// shareKeys are, per PreFilter plugin (in the engine's order), the plugin's
	// preFilterShareKey for pod; "" when its state is the class's own.
	shareKeys []string
	// lenders[i], when set, is the class whose own object the i-th plugin's state is, not a
	// copy (sharedPreFilter). The class never changes it: it links again to the lender,
	// brought to the snapshot's content, whenever it is brought up to date itself (borrow),
	// or reruns the plugin's PreFilter when no lender can serve. A Revert can bring the log
	// back to where the class is current while the lender is not (linksHold).
	lenders          []*classState
	podInfo          fwk.PodInfo
	state            fwk.CycleState
	result           *fwk.PreFilterResult
	status           *fwk.Status
	pluginsWithNodes []string

	epoch uint64
	at    int    // the state reflects log[:at]
	atGen uint64 // gen of log[at-1] when it was applied
	// undo are the applied entries that a Revert may still drop, oldest first.
	undo []undoStep
	// incremental is false when changes cannot be replayed (a PreFilter failed, or a plugin
	// has no known role): any change reruns PreFilter.
	incremental bool

	spread spreadInfo
	// view reads PodTopologySpread's state, when it runs for the class and can be read.
	view *spreadView
	// stableEpoch changes whenever a node the view rejects may have become acceptable: a
	// minimum rose, a count fell, the domains changed under minDomains, or the state was
	// recomputed. While it holds, only pods were added, so the view's rejections stand.
	stableEpoch uint64
	// checkpoint is PodTopologySpread's state before the first change of the open forks
	// was applied, restored when they are reverted (its AddPod cannot be undone exactly).
	checkpoint *checkpoint
}

type checkpoint struct {
	at   int
	data fwk.StateData
}

// spreadStateKey is where PodTopologySpread keeps its PreFilter state ("PreFilter" + name,
// as every in-tree plugin does).
var spreadStateKey = stateKeyOf(names.PodTopologySpread)

// spreadInfo is what the engine needs to know of a pod's spread constraints.
type spreadInfo struct {
	// selectors select the pods the constraints count; unknown means they are not known
	// (default constraints apply), so every pod of the namespace may count.
	selectors []labels.Selector
	keys      []string
	unknown   bool
	// selfMatch: the pod matches all its selectors, so it can stand for a counted pod when
	// a node is added.
	selfMatch bool
	// standIn, when the pod does not match its selectors, is a pod of its namespace that
	// does (their matchLabels), to stand for a counted pod instead; nil when there is none.
	standIn *corev1.Pod
}

type undoStep struct {
	index   int
	entry   logEntry
	prevGen uint64
}

// replay collects what a replay could not follow.
type replay struct {
	// skipped[i]: the class skips followed plugin i; the set does not change during a
	// replay (rerunStale changes it after), so it is read once, not per change.
	skipped []bool
	full    bool
	stale   sets.Set[string]
	// restoreSpread: a change PodTopologySpread followed was undone; its checkpoint is due.
	restoreSpread bool
	// unsettled: PodTopologySpread's state changed other than by pods added.
	unsettled bool
	// borrowed are the plugins whose states are copied from a lender instead of replayed
	// (borrow); they are stale from the start.
	borrowed sets.Set[string]
}

func (r *replay) markStale(name string) {
	if r.stale == nil {
		r.stale = sets.New[string]()
	}
	r.stale.Insert(name)
}

// classKey returns pod's equivalence class key, computed once per pod object.
func (e *Engine) classKey(pod *corev1.Pod) string {
	if key, ok := e.keys[pod]; ok {
		return key
	}
	key := EquivalenceKey(pod)
	e.keys[pod] = key
	return key
}

// preFilter returns the PreFilter outcome of pod's class for the snapshot's current content.
func (e *Engine) preFilter(ctx context.Context, pod *corev1.Pod) *classState {
	return e.preFilterClass(ctx, e.classKey(pod), pod)
}

// preFilterClass brings the PreFilter state of class key (of which pod is a member) to the
// snapshot's current content.
func (e *Engine) preFilterClass(ctx context.Context, key string, pod *corev1.Pod) *classState {
	cs := e.classes[key]
	s := e.snapshot
	if cs != nil && cs.epoch == s.epoch && cs.current(s) && e.linksHold(cs) {
		return cs
	}
	// While the class is brought up to date, it lends its state to no other class.
	e.busy[key] = true
	defer delete(e.busy, key)
	if cs == nil || cs.epoch != s.epoch || !cs.incremental {
		cs = e.compute(ctx, key, pod)
		e.classes[key] = cs
		return cs
	}
	before := cs.view
	r, ok := e.update(ctx, cs)
	if !ok {
		cs = e.compute(ctx, key, cs.pod)
		e.classes[key] = cs
		return cs
	}
	e.refreshView(cs)
	if r.unsettled || !cs.view.settledSince(before) {
		cs.stableEpoch = e.nextEpoch()
	}
	e.lend(cs)
	return cs
}

func (e *Engine) nextEpoch() uint64 {
	e.epochs++
	return e.epochs
}

// SpreadEpoch returns a value that stays the same while every node PodTopologySpread's
// numbers rejected for pod (FirstFit's spreadRejected) stays rejected, as long as the node's
// labels do not change; 0 when there is no such guarantee.
func (e *Engine) SpreadEpoch(ctx context.Context, pod *corev1.Pod) uint64 {
	cs := e.preFilter(ctx, pod)
	if cs.view == nil {
		return 0
	}
	return cs.stableEpoch
}

// refreshView rereads PodTopologySpread's state after it changed.
func (e *Engine) refreshView(cs *classState) {
	cs.view = nil
	if cs.incremental && e.spreadActive(cs) {
		if view, ok := readSpread(cs.state, cs.pod); ok {
			cs.view = view
		}
	}
}

// current reports whether cs reflects exactly the snapshot's log.
func (cs *classState) current(s *Snapshot) bool {
	return cs.at == len(s.log) && (cs.at == 0 || s.log[cs.at-1].gen == cs.atGen)
}

// compute runs every PreFilter for pod, the class key's member; a plugin's state is copied
// from another class that shares it (sharedPreFilter) instead, when one can lend it.
func (e *Engine) compute(ctx context.Context, key string, pod *corev1.Pod) *classState {
	s := e.snapshot
	state := framework.NewCycleState()
	cs := &classState{key: key, pod: pod, state: state, shareKeys: e.shareKeysOf(pod), epoch: s.epoch, at: len(s.log)}
	cs.result, cs.status, cs.pluginsWithNodes = e.runPreFilter(ctx, cs)
	cs.incremental = cs.status.IsSuccess() && e.rolesKnown
	if cs.at > 0 {
		cs.atGen = s.log[cs.at-1].gen
	}
	if cs.incremental {
		info, err := framework.NewPodInfo(pod)
		if err != nil {
			cs.incremental = false
			return cs
		}
		cs.podInfo = info
		cs.spread = spreadOf(pod)
		if cs.spread.standIn != nil {
			if cs.standIn, err = framework.NewPodInfo(cs.spread.standIn); err != nil {
				cs.incremental = false
				return cs
			}
		}
		e.refreshView(cs)
		cs.stableEpoch = e.nextEpoch()
		cs.undo = e.forkSteps()
		e.lend(cs)
	}
	return cs
}

// forkSteps returns the changes of the open forks as undo steps: a state computed inside a
// fork holds them as if it had been computed before the fork and followed them, so reverting
// the fork undoes them (as update does for any followed change) instead of computing the
// state again. Consolidation computes its classes inside its first fork and reverts it.
func (e *Engine) forkSteps() []undoStep {
	s := e.snapshot
	var steps []undoStep
	for i := s.permanentLen(); i < len(s.log); i++ {
		step := undoStep{index: i, entry: s.log[i]}
		if i > 0 {
			step.prevGen = s.log[i-1].gen
		}
		steps = append(steps, step)
	}
	return steps
}

// runPreFilter runs the PreFilter plugins for cs's pod in the framework's order and
// combines their answers as the framework's RunPreFilterPlugins does: a skip is recorded in
// the state, UnschedulableAndUnresolvable or an error stops, Unschedulable is returned
// after the others ran, and the plugins' node lists are intersected.
func (e *Engine) runPreFilter(ctx context.Context, cs *classState) (*fwk.PreFilterResult, *fwk.Status, []string) {
	skip := sets.New[string]()
	defer func() { cs.state.SetSkipFilterPlugins(skip) }()
	nodes, err := e.snapshot.List()
	if err != nil {
		return nil, fwk.AsStatus(fmt.Errorf("listing nodes: %w", err)), nil
	}
	var result *fwk.PreFilterResult
	var unschedulable *fwk.Status
	withNodes := sets.New[string]()
	for i, p := range e.preFilterPlugins {
		status, lender := e.sharedPreFilter(ctx, cs, i)
		shared := lender != nil
		cs.setLender(i, lender)
		var r *fwk.PreFilterResult
		if !shared {
			e.stats.ran[p.name]++
			r, status = p.plugin.PreFilter(ctx, cs.state, cs.pod, e.preFilterNodes(p, cs.pod, nodes))
		}
		if status.IsSkip() {
			skip.Insert(p.name)
			continue
		}
		if !status.IsSuccess() {
			status.SetPlugin(p.name)
			switch status.Code() {
			case fwk.UnschedulableAndUnresolvable:
				return nil, status, nil
			case fwk.Unschedulable:
				unschedulable = status
				continue
			}
			return nil, fwk.AsStatus(fmt.Errorf("running PreFilter plugin %q: %w", p.name, status.AsError())).WithPlugin(p.name), nil
		}
		if !r.AllNodes() {
			withNodes.Insert(p.name)
		}
		result = result.Merge(r)
		if !result.AllNodes() && len(result.NodeNames) == 0 {
			plugins := sortedList(withNodes)
			msg := fmt.Sprintf("node(s) didn't satisfy plugin(s) %v simultaneously", plugins)
			if len(plugins) == 1 {
				msg = fmt.Sprintf("node(s) didn't satisfy plugin %v", plugins[0])
			}
			return result, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, msg), plugins
		}
	}
	return result, unschedulable, sortedList(withNodes)
}

// shareKeysOf returns pod's preFilterShareKey per PreFilter plugin, nil when no plugin's
// state is shared.
func (e *Engine) shareKeysOf(pod *corev1.Pod) []string {
	if e.isolated || !e.rolesKnown {
		return nil
	}
	var keys []string
	for i, p := range e.preFilterPlugins {
		key, ok := preFilterShareKey(p.name, pod)
		if !ok {
			continue
		}
		if keys == nil {
			keys = make([]string, len(e.preFilterPlugins))
		}
		keys[i] = key
	}
	return keys
}

// sharedPreFilter gives cs the state of its i-th PreFilter plugin from the class that last
// held it for the same share key, brought to the snapshot's current content first: the
// plugin's PreFilter would compute it again from the same inputs (preFilterShareKey). It
// reports false when no class can lend it; then the plugin's PreFilter runs. A state the
// lender followed incrementally is as exact as its own: its AddPod and RemovePod keep it,
// and PodTopologySpread's PreFilter reran when its minimum went stale.
func (e *Engine) sharedPreFilter(ctx context.Context, cs *classState, i int) (*fwk.Status, *classState) {
	if cs.shareKeys == nil || cs.shareKeys[i] == "" {
		return nil, nil
	}
	shareKey, name := cs.shareKeys[i], e.preFilterPlugins[i].name
	lender := e.shares[shareKey]
	if lender == nil || lender.key == cs.key || e.busy[lender.key] {
		return nil, nil
	}
	lender = e.preFilterClass(ctx, lender.key, lender.pod)
	s := e.snapshot
	// A lender lends only a state it follows itself (linksHold checks it as the owner).
	if !lender.incremental || lender.epoch != s.epoch || !lender.current(s) || lender.shareKeys == nil || lender.shareKeys[i] != shareKey || lender.isLinked(i) {
		return nil, nil
	}
	if lender.state.GetSkipFilterPlugins().Has(name) {
		e.stats.shared[name]++
		return fwk.NewStatus(fwk.Skip), lender
	}
	data, err := lender.state.Read(stateKeyOf(name))
	if err != nil {
		return nil, nil
	}
	// The object itself, not a copy: only the lender changes it, and only when the log
	// moves, which makes cs stale too (linked).
	cs.state.Write(stateKeyOf(name), data)
	e.stats.shared[name]++
	return nil, lender
}

// setLender records the class whose state cs's i-th plugin state is (sharedPreFilter), nil
// for its own.
func (cs *classState) setLender(i int, lender *classState) {
	if cs.shareKeys == nil {
		return
	}
	if cs.lenders == nil {
		cs.lenders = make([]*classState, len(cs.shareKeys))
	}
	cs.lenders[i] = lender
}

func (cs *classState) isLinked(i int) bool { return cs.lenders != nil && cs.lenders[i] != nil }

// linksHold reports whether the states cs holds linked are still its lenders' current
// ones: the lenders reflect the same log as cs (a Revert may have brought cs back to
// current while a lender followed the reverted fork) and hold the same objects.
func (e *Engine) linksHold(cs *classState) bool {
	s := e.snapshot
	for i, lender := range cs.lenders {
		if lender == nil {
			continue
		}
		if e.classes[lender.key] != lender || lender.epoch != s.epoch || !lender.current(s) {
			return false
		}
		name := e.preFilterPlugins[i].name
		if cs.state.GetSkipFilterPlugins().Has(name) != lender.state.GetSkipFilterPlugins().Has(name) {
			return false
		}
		mine, errMine := cs.state.Read(stateKeyOf(name))
		theirs, errTheirs := lender.state.Read(stateKeyOf(name))
		if (errMine == nil) != (errTheirs == nil) || mine != theirs {
			return false
		}
	}
	return true
}

// lend makes cs, whose state is current, the class that lends its shared plugins' states to
// the next class that needs them: the class used last is the likeliest to be current. A
// state cs holds linked is its lender's, which stays the lender.
func (e *Engine) lend(cs *classState) {
	for i, key := range cs.shareKeys {
		if key != "" && !cs.isLinked(i) {
			e.shares[key] = cs
		}
	}
}

// stateKeyOf is where an in-tree plugin keeps its PreFilter state.
func stateKeyOf(plugin string) fwk.StateKey { return fwk.StateKey("PreFilter" + plugin) }

// preFilterStats counts, per plugin, the PreFilter runs and the states copied from another
// class instead.
type preFilterStats struct {
	ran, shared map[string]int
}

// spreadOf describes pod's DoNotSchedule spread constraints.
func spreadOf(pod *corev1.Pod) spreadInfo {
	var info spreadInfo
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != corev1.DoNotSchedule {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
		if err != nil {
			return spreadInfo{unknown: true}
		}
		info.selectors = append(info.selectors, sel)
		info.keys = append(info.keys, c.TopologyKey)
	}
	if len(info.selectors) == 0 {
		return spreadInfo{unknown: true}
	}
	info.selfMatch = matchesAll(info.selectors, pod.Labels)
	if !info.selfMatch {
		info.standIn = spreadStandIn(pod, info.selectors)
	}
	return info
}

func matchesAll(selectors []labels.Selector, podLabels map[string]string) bool {
	for _, sel := range selectors {
		if !sel.Matches(labels.Set(podLabels)) {
			return false
		}
	}
	return true
}

// spreadStandIn returns a pod of pod's namespace that every DoNotSchedule constraint of pod
// counts: the union of their matchLabels, with pod's own values for their matchLabelKeys
// (which the plugin adds to the selector); nil when the constraints select with expressions
// or disagree.
func spreadStandIn(pod *corev1.Pod, selectors []labels.Selector) *corev1.Pod {
	set := map[string]string{}
	put := func(key, value string) bool {
		if old, ok := set[key]; ok && old != value {
			return false
		}
		set[key] = value
		return true
	}
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != corev1.DoNotSchedule {
			continue
		}
		if c.LabelSelector == nil || len(c.LabelSelector.MatchExpressions) > 0 {
			return nil
		}
		for key, value := range c.LabelSelector.MatchLabels {
			if !put(key, value) {
				return nil
			}
		}
		for _, key := range c.MatchLabelKeys {
			if value, ok := pod.Labels[key]; ok && !put(key, value) {
				return nil
			}
		}
	}
	if !matchesAll(selectors, set) {
		return nil
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Labels: set}}
}

// spreadCounts reports whether pod may be counted by cs's spread constraints. The selectors
// leave out matchLabelKeys, which only narrow them, so a pod they reject is never counted.
func (cs *classState) spreadCounts(pod *corev1.Pod) bool {
	if pod.Namespace != cs.pod.Namespace {
		return false
	}
	if cs.spread.unknown {
		return true
	}
	set := labels.Set(pod.Labels)
	for _, sel := range cs.spread.selectors {
		if sel.Matches(set) {
			return true
		}
	}
	return false
}

// sameDomains reports whether PodTopologySpread counts the pods of a node in the same domains
// before and after its Node object changed from prev to next: the same values of every
// constraint's key, and the same answer from the inclusion policies (the pod's required node
// affinity, the node's taints).
func (cs *classState) sameDomains(prev, next *corev1.Node) bool {
	if cs.spread.unknown {
		return false
	}
	for _, key := range cs.spread.keys {
		before, had := prev.Labels[key]
		after, has := next.Labels[key]
		if had != has || before != after {
			return false
		}
	}
	if !equality.Semantic.DeepEqual(prev.Spec.Taints, next.Spec.Taints) {
		return false
	}
	affinity := nodeaffinity.GetRequiredNodeAffinity(cs.pod)
	before, err := affinity.Match(prev)
	if err != nil {
		return false
	}
	after, err := affinity.Match(next)
	return err == nil && before == after
}

// outsideSpread reports whether node lacks a topology key of cs's constraints: then
// PodTopologySpread counts neither the node as a domain nor its pods.
func (cs *classState) outsideSpread(node *corev1.Node) bool {
	if cs.spread.unknown {
		return false
	}
	for _, key := range cs.spread.keys {
		if _, ok := node.Labels[key]; !ok {
			return true
		}
	}
	return false
}

// update brings cs to the snapshot's content: it rolls back the entries a Revert dropped,
// applies the new ones and reruns the plugins they left stale. It returns false when only a
// full PreFilter can.
func (e *Engine) update(ctx context.Context, cs *classState) (*replay, bool) {
	s := e.snapshot
	r := &replay{skipped: make([]bool, len(e.followed))}
	skip := cs.state.GetSkipFilterPlugins()
	for i, p := range e.followed {
		r.skipped[i] = skip.Has(p.name)
	}
	e.borrow(cs, r)
	for len(cs.undo) > 0 && !r.full {
		top := cs.undo[len(cs.undo)-1]
		if top.index < len(s.log) && s.log[top.index].gen == top.entry.gen {
			break
		}
		e.unapply(ctx, cs, &top.entry, r)
		cs.at, cs.atGen = top.index, top.prevGen
		cs.undo = cs.undo[:len(cs.undo)-1]
	}
	if r.full || cs.at > len(s.log) || (cs.at > 0 && s.log[cs.at-1].gen != cs.atGen) {
		return r, false
	}
	if r.restoreSpread {
		r.unsettled = true
		if cs.checkpoint != nil && cs.checkpoint.at == cs.at {
			cs.state.Write(spreadStateKey, cs.checkpoint.data)
		} else {
			r.markStale(names.PodTopologySpread)
		}
		cs.checkpoint = nil
	}
	permanent := s.permanentLen()
	drop := 0
	for drop < len(cs.undo) && cs.undo[drop].index < permanent {
		drop++
	}
	if drop > 0 {
		cs.undo = append(cs.undo[:0], cs.undo[drop:]...)
	}
	if len(cs.undo) == 0 {
		cs.checkpoint = nil
	}
	// Changes no Revert can drop first; then, before the open forks' changes, a checkpoint.
	for ; cs.at < permanent && !r.full; cs.at++ {
		entry := &s.log[cs.at]
		e.apply(ctx, cs, entry, r)
		cs.atGen = entry.gen
	}
	if r.full {
		return r, false
	}
	if cs.at == len(s.log) {
		return r, e.rerunStale(ctx, cs, r)
	}
	// A rerun sees the snapshot as it is now, forks included, so a plugin left stale by
	// the changes below the forks is rerun after the forks' changes, and gets no checkpoint.
	if len(cs.undo) == 0 && r.stale.Len() == 0 {
		cs.checkpoint = nil
		if e.spreadActive(cs) {
			if data, err := cs.state.Read(spreadStateKey); err == nil {
				cs.checkpoint = &checkpoint{at: cs.at, data: data.Clone()}
			}
		}
	}
	for ; cs.at < len(s.log) && !r.full; cs.at++ {
		entry := &s.log[cs.at]
		e.apply(ctx, cs, entry, r)
		cs.undo = append(cs.undo, undoStep{index: cs.at, entry: *entry, prevGen: cs.atGen})
		cs.atGen = entry.gen
	}
	if r.full {
		return r, false
	}
	return r, e.rerunStale(ctx, cs, r)
}

// borrow marks the shared plugins of cs stale, so that rerunStale takes their states from a
// lender (sharedPreFilter) instead of cs replaying the changes: one class per share key
// follows the log, and the others link to its state. A state cs holds linked is always
// taken again, since cs never changes the lender's object: when no lender can serve, the
// plugin's PreFilter reruns.
func (e *Engine) borrow(cs *classState, r *replay) {
	if cs.shareKeys == nil {
		return
	}
	s := e.snapshot
	for i, key := range cs.shareKeys {
		if key == "" {
			continue
		}
		lender := e.shares[key]
		usable := lender != nil && lender.key != cs.key && !e.busy[lender.key] && lender.epoch == s.epoch && lender.incremental
		if !usable && !cs.isLinked(i) {
			continue
		}
		name := e.preFilterPlugins[i].name
		r.markStale(name)
		if usable {
			if r.borrowed == nil {
				r.borrowed = sets.New[string]()
			}
			r.borrowed.Insert(name)
		}
		if e.preFilterPlugins[i].role == roleSpread {
			// The lender's state or a rerun replaces the state the checkpoint was taken of.
			cs.checkpoint = nil
		}
	}
}

// spreadActive reports whether PodTopologySpread runs for cs's class.
func (e *Engine) spreadActive(cs *classState) bool {
	return e.spreadPlugin && !cs.state.GetSkipFilterPlugins().Has(names.PodTopologySpread)
}

// apply replays one change onto cs.
func (e *Engine) apply(ctx context.Context, cs *classState, entry *logEntry, r *replay) {
	if entry.kind == logOpaque {
		r.full = true
		return
	}
	for i, p := range e.followed {
		if r.full {
			return
		}
		skipped := r.skipped[i]
		if !skipped && followsNodeDevices(p, entry) {
			r.markStale(p.name)
			continue
		}
		switch p.role {
		case roleExtended:
			if skipped {
				if endsSkip(cs, p, entry, false) {
					r.markStale(p.name)
				}
				continue
			}
			if r.stale.Has(p.name) {
				continue
			}
			e.extend(ctx, cs, p, entry, false, r)
		case roleSpread:
			if r.borrowed.Has(p.name) && entry.kind != logPodAdded && entry.kind != logNodeAdded {
				r.unsettled = true
			}
			if skipped || r.stale.Has(p.name) {
				continue
			}
			switch entry.kind {
			case logPodAdded:
				if cs.spreadCounts(entry.pod.GetPod()) {
					e.addCounted(ctx, cs, p, entry, r)
				}
			case logPodRemoved:
				if cs.spreadCounts(entry.pod.GetPod()) {
					r.unsettled = true
					e.extend(ctx, cs, p, entry, false, r)
				}
			case logNodeAdded:
				e.addDomain(ctx, cs, p, entry.node, r)
			case logNodeRemoved:
				// Its counted pods leave, and its domain may go with it (PreFilter counts
				// only the domains of the nodes there are); a node outside every domain
				// holding no counted pod changes nothing.
				if cs.outsideSpread(entry.node.Node()) && !slices.ContainsFunc(entry.pods, func(pod fwk.PodInfo) bool {
					return cs.spreadCounts(pod.GetPod())
				}) {
					continue
				}
				r.unsettled = true
				r.markStale(p.name)
			case logNodeReplaced:
				// A node that stays in the same domains, as the plugin includes nodes,
				// changes no count. A node that was outside every domain enters the new one
				// with its pods: a new empty domain unless one of its pods is counted.
				r.unsettled = true
				if cs.sameDomains(entry.prev.Node(), entry.node.Node()) {
					continue
				}
				if !cs.outsideSpread(entry.prev.Node()) {
					r.markStale(p.name)
					continue
				}
				for _, pod := range entry.pods {
					if cs.spreadCounts(pod.GetPod()) {
						r.markStale(p.name)
						break
					}
				}
				if !r.stale.Has(p.name) {
					e.addDomain(ctx, cs, p, entry.node, r)
				}
			default:
				r.markStale(p.name)
			}
		}
	}
}

// addCounted adds a pod the class's spread constraints may count with the plugin's AddPod,
// and sets the minimum from the counts when that left it stale.
func (e *Engine) addCounted(ctx context.Context, cs *classState, p preFilterPlugin, entry *logEntry, r *replay) {
	before, ok := readSpread(cs.state, cs.pod)
	if !ok {
		r.markStale(p.name)
		return
	}
	held := before.minimumHeld(entry.node.Node())
	if !p.plugin.PreFilterExtensions().AddPod(ctx, cs.state, cs.pod, entry.pod, entry.node).IsSuccess() {
		r.full = true
		return
	}
	after, ok := readSpread(cs.state, cs.pod)
	if ok && after.minimumStale(held) {
		// The counts are exact; the minimum is set from them, not counted again over
		// every node. Whether it rose is settledSince's to tell.
		ok = repairMinimums(cs.state)
	}
	if !ok {
		r.markStale(p.name)
	}
}

// addDomain counts node's domain as PodTopologySpread's PreFilter would for an empty node: the
// class's pod is added to it and removed again, leaving the domain with zero pods. The
// plugin's AddPod applies the same node inclusion rules as its PreFilter.
func (e *Engine) addDomain(ctx context.Context, cs *classState, p preFilterPlugin, node fwk.NodeInfo, r *replay) {
	counted := cs.podInfo
	if !cs.spread.selfMatch {
		counted = cs.standIn
	}
	if counted == nil {
		r.markStale(p.name)
		return
	}
	ext := p.plugin.PreFilterExtensions()
	if !ext.AddPod(ctx, cs.state, cs.pod, counted, node).IsSuccess() ||
		!ext.RemovePod(ctx, cs.state, cs.pod, counted, node).IsSuccess() {
		r.full = true
	}
}

// endsSkip reports whether a change (or its undoing) may end a plugin's Skip for cs. Skips
// of the in-tree plugins depend on the pod alone, but for InterPodAffinity's: a pod without
// terms skips it while no pod in the snapshot has required anti-affinity that matches it,
// and a pod with such a term arriving, or a node whose pods have some getting new labels,
// changes that.
func endsSkip(cs *classState, p preFilterPlugin, entry *logEntry, undo bool) bool {
	if p.name != names.InterPodAffinity {
		return false
	}
	switch {
	case entry.kind == logPodAdded && !undo, entry.kind == logPodRemoved && undo:
		return antiAffinityMayMatch(entry.pod, cs.pod)
	case entry.kind == logNodeRemoved && undo:
		return slices.ContainsFunc(entry.pods, func(pod fwk.PodInfo) bool { return antiAffinityMayMatch(pod, cs.pod) })
	case entry.kind == logNodeReplaced:
		for _, pod := range entry.pods {
			if len(pod.GetRequiredAntiAffinityTerms()) > 0 {
				return true
			}
		}
	}
	return false
}

// antiAffinityMayMatch reports whether a required anti-affinity term of existing may match
// pod, as InterPodAffinity's PreFilter counts them: the term's namespaces hold pod's and its
// selector matches pod's labels. A term with a namespace selector or label keys (which
// depend on labels the engine does not look up) may match.
func antiAffinityMayMatch(existing fwk.PodInfo, pod *corev1.Pod) bool {
	terms := existing.GetRequiredAntiAffinityTerms()
	if len(terms) == 0 {
		return false
	}
	if a := existing.GetPod().Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if t.NamespaceSelector != nil || len(t.MatchLabelKeys) > 0 || len(t.MismatchLabelKeys) > 0 {
				return true
			}
		}
	}
	set := labels.Set(pod.Labels)
	for _, t := range terms {
		if t.Namespaces.Has(pod.Namespace) && t.Selector.Matches(set) {
			return true
		}
	}
	return false
}

// unapply undoes one change on cs, for a Revert.
func (e *Engine) unapply(ctx context.Context, cs *classState, entry *logEntry, r *replay) {
	if entry.kind == logOpaque {
		r.full = true
		return
	}
	for i, p := range e.followed {
		if r.full {
			return
		}
		if r.borrowed.Has(p.name) && p.role == roleSpread {
			r.unsettled = true
		}
		if r.stale.Has(p.name) {
			continue
		}
		if r.skipped[i] {
			if endsSkip(cs, p, entry, true) {
				r.markStale(p.name)
			}
			continue
		}
		if followsNodeDevices(p, entry) {
			r.markStale(p.name)
			continue
		}
		switch p.role {
		case roleExtended:
			e.extend(ctx, cs, p, entry, true, r)
		case roleSpread:
			r.restoreSpread = true
		}
	}
}

// followsNodeDevices reports whether p is DynamicResources and entry adds, changes or removes a node:
// its PreFilter builds an allocator from the ResourceSlices it sees then, and caches what it
// found per node, so a node that comes with slices of its own (a hypothetical node's) needs
// the PreFilter rerun. Pods without claims skip the plugin and never rerun it.
func followsNodeDevices(p preFilterPlugin, entry *logEntry) bool {
	return p.name == names.DynamicResources && (entry.kind == logNodeAdded || entry.kind == logNodeReplaced || entry.kind == logNodeRemoved)
}

// extend runs p's AddPod and RemovePod for entry, or undoes it.
func (e *Engine) extend(ctx context.Context, cs *classState, p preFilterPlugin, entry *logEntry, undo bool, r *replay) {
	ext := p.plugin.PreFilterExtensions()
	if ext == nil {
		return
	}
	add := func(pod fwk.PodInfo, node fwk.NodeInfo) {
		if !ext.AddPod(ctx, cs.state, cs.pod, pod, node).IsSuccess() {
			r.full = true
		}
	}
	remove := func(pod fwk.PodInfo, node fwk.NodeInfo) {
		if !ext.RemovePod(ctx, cs.state, cs.pod, pod, node).IsSuccess() {
			r.full = true
		}
	}
	switch {
	case entry.kind == logPodAdded && !undo, entry.kind == logPodRemoved && undo:
		add(entry.pod, entry.node)
	case entry.kind == logPodRemoved && !undo, entry.kind == logPodAdded && undo:
		remove(entry.pod, entry.node)
	case entry.kind == logNodeRemoved:
		for _, pod := range entry.pods {
			if undo {
				add(pod, entry.node)
			} else {
				remove(pod, entry.node)
			}
		}
	case entry.kind == logNodeReplaced:
		from, to := entry.prev, entry.node
		if undo {
			from, to = to, from
		}
		for _, pod := range entry.pods {
			remove(pod, from)
			add(pod, to)
		}
	}
}

// rerunStale reruns the PreFilter of each stale plugin on its own. It returns false when a
// plugin answers something other than success or skip, which needs the full PreFilter.
func (e *Engine) rerunStale(ctx context.Context, cs *classState, r *replay) bool {
	stale := r.stale
	if stale.Len() == 0 {
		return true
	}
	// A borrowed state is as exact as a replayed one: whether it settled is known from the
	// changes themselves (apply, unapply).
	if stale.Has(names.PodTopologySpread) && !r.borrowed.Has(names.PodTopologySpread) {
		r.unsettled = true
	}
	nodes, err := e.snapshot.List()
	if err != nil {
		return false
	}
	skip := cs.state.GetSkipFilterPlugins()
	changed := false
	for i, p := range e.preFilterPlugins {
		if !stale.Has(p.name) {
			continue
		}
		status, lender := e.sharedPreFilter(ctx, cs, i)
		shared := lender != nil
		cs.setLender(i, lender)
		if !shared {
			e.stats.ran[p.name]++
			var result *fwk.PreFilterResult
			result, status = p.plugin.PreFilter(ctx, cs.state, cs.pod, e.preFilterNodes(p, cs.pod, nodes))
			if !result.AllNodes() {
				return false
			}
		}
		switch {
		case status.IsSkip():
			if !skip.Has(p.name) {
				skip, changed = withItem(skip, p.name, true), true
			}
		case status.IsSuccess():
			if skip.Has(p.name) {
				skip, changed = withItem(skip, p.name, false), true
			}
		default:
			return false
		}
	}
	if changed {
		// The set may be shared with clones of the state: it is replaced, never changed.
		cs.state.SetSkipFilterPlugins(skip)
	}
	return true
}

func withItem(set sets.Set[string], item string, present bool) sets.Set[string] {
	out := sets.New[string]()
	if set != nil {
		out = set.Clone()
	}
	if present {
		out.Insert(item)
	} else {
		out.Delete(item)
	}
	return out
}

// followedPlugins are the plugins of plugins, in order, whose states apply and unapply
// follow: those AddPod and RemovePod keep (roleExtended, roleSpread), and DynamicResources,
// rerun when a node comes or goes (followsNodeDevices). A change leaves the others' states
// as they are (rolePure), and the engine replays nothing when a role is unknown; the replay
// loops, run per change and per class, skip them.
func followedPlugins(plugins []preFilterPlugin) []preFilterPlugin {
	var out []preFilterPlugin
	for _, p := range plugins {
		if p.role == roleExtended || p.role == roleSpread || p.name == names.DynamicResources {
			out = append(out, p)
		}
	}
	return out
}

// preFilterPluginsOf lists the framework's PreFilter plugins in order with their roles, and
// whether every role is known.
func preFilterPluginsOf(fw framework.Framework, built map[string]fwk.Plugin) ([]preFilterPlugin, bool, error) {
	var out []preFilterPlugin
	known := true
	for _, cfg := range fw.ListPlugins().PreFilter.Enabled {
		p, ok := built[cfg.Name].(fwk.PreFilterPlugin)
		if !ok {
			return nil, false, fmt.Errorf("PreFilter plugin %q was not built by the engine", cfg.Name)
		}
		role := pluginRoles[cfg.Name]
		if role == roleUnknown {
			known = false
		}
		out = append(out, preFilterPlugin{name: cfg.Name, role: role, plugin: p})
	}
	return out, known, nil
}
