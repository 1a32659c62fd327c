package solver

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/scheduling"
	"github.com/joinery-dev/joinery/simulation"
)

// memo is what pods of one equivalence class learn for one attempt and share with their
// siblings.
type memo struct {
	// failed[i]: claim i cannot take the attempt, now or later.
	failed []bool
	// noNew, when set, is why no new NodeClaim can take a monotone attempt.
	noNew string
	pools map[*pool]*poolFit
	// shapes are the new-node shapes per NodePool and open keys (see newShapes).
	shapes map[*pool]map[string][]newShape
	// spread marks the claims PodTopologySpread's numbers rejected for a non-monotone
	// attempt; a mark holds while the engine's SpreadEpoch and the claim's labels do.
	spread map[int]spreadMark
	// forGood maps the claims a non-monotone attempt was rejected from for good (resources,
	// host ports, required anti-affinity: simulation.RejectedForGood) to their labels'
	// version; the rejection holds while that does.
	forGood map[int]int
}

type spreadMark struct {
	epoch         uint64
	labelsVersion int
}

// spreadRejects reports whether claim c is still rejected by the spread of an attempt whose
// current epoch is epoch.
func (m *memo) spreadRejects(c *claim, epoch uint64) bool {
	mark, ok := m.spread[c.index]
	return ok && epoch != 0 && mark.epoch == epoch && mark.labelsVersion == c.labelsVersion
}

func (m *memo) hasFailed(i int) bool { return i < len(m.failed) && m.failed[i] }

// rejectsForGood reports whether claim c is still rejected for good (see forGood).
func (m *memo) rejectsForGood(c *claim) bool {
	version, ok := m.forGood[c.index]
	return ok && version == c.labelsVersion
}

func (m *memo) fail(i int) {
	if i >= len(m.failed) {
		m.failed = append(m.failed, make([]bool, i+1-len(m.failed))...)
	}
	m.failed[i] = true
}

func (r *run) memo(key string) *memo {
	m, ok := r.memos[key]
	if !ok {
		m = &memo{pools: map[*pool]*poolFit{}, shapes: map[*pool]map[string][]newShape{}, spread: map[int]spreadMark{}, forGood: map[int]int{}}
		r.memos[key] = m
	}
	return m
}

// place plans pod: onto a claim of the batch or in flight when the Filters allow, else onto a
// new claim from the first NodePool that can host it; strictest attempt first.
func (r *run) place(ctx context.Context, pod *corev1.Pod) error {
	if placed, err := r.tryInitializing(ctx, pod); err != nil || placed {
		return err
	}
	req := podVec(pod)
	var reasons []string
	// failed holds the preference sets the pod did not fit with: a superset cannot fit either
	// (each kept preference is one more required constraint), so it is not tried.
	var failed []uint64
	for _, a := range r.s.attempts(pod) {
		if a.relaxed && slices.ContainsFunc(failed, func(f uint64) bool { return a.kept&f == f }) {
			continue
		}
		if a.relaxed {
			failed = append(failed, a.kept)
		}
		m := r.memo(a.key)
		// antiAffinityKeys change only when a pod is committed, so the split holds for the
		// whole attempt.
		open := r.openKeys(a)
		placed, err := r.tryClaims(ctx, pod, a, m, open, req)
		if err != nil || placed {
			return err
		}
		if m.noNew != "" {
			reasons = []string{m.noNew}
			continue
		}
		placed, why, err := r.tryNew(ctx, pod, a, m, open, req)
		if err != nil || placed {
			return err
		}
		if a.monotone {
			m.noNew = why
		}
		reasons = []string{why}
	}
	reasons = append(reasons, r.skipped...)
	r.plan.Unschedulable[pod.UID] = "no NodePool fits: " + strings.Join(reasons, "; ")
	return nil
}

// candidate is a claim that may take the attempt, with the requirements it would have.
type candidate struct {
	c      *claim
	merged scheduling.Requirements
	its    cloudprovider.InstanceTypes
	open   openKeys
	// narrowed: merged adds the attempt's requirements to the claim's (else it is c.reqs).
	narrowed bool
}

// tryClaims tries the claims that exist, in order (a pod's earlier in-flight NodeClaim
// first). Claims whose node needs no new labels go to the Filters in growing chunks
// (FirstFit, in parallel), so a pod that fits an early claim never looks at the later ones;
// the others are tried one by one with their open labels narrowed, after every direct
// candidate failed.
func (r *run) tryClaims(ctx context.Context, pod *corev1.Pod, a attempt, m *memo, open openKeys, req vec) (bool, error) {
	order := r.claims
	if c, ok := r.plannedOn[pod.UID]; ok {
		order = append([]*claim{c}, slices.DeleteFunc(slices.Clone(order), func(x *claim) bool { return x == c })...)
	}
	direct, names, relabel := r.directBuf[:0], r.namesBuf[:0], r.relabelBuf[:0]
	defer func() {
		clear(direct)
		clear(relabel)
		r.directBuf, r.namesBuf, r.relabelBuf = direct[:0], names[:0], relabel[:0]
	}()
	// A non-monotone attempt skips the claims the spread rejected while that still holds.
	var epoch uint64
	if !a.monotone {
		epoch = r.engine.SpreadEpoch(ctx, a.pod)
	}
	var marks []simulation.Rejection
	chunk := firstChunk
	flush := func() (bool, error) {
		if !a.monotone {
			marks = append(marks[:0], make([]simulation.Rejection, len(names))...)
		}
		found, err := r.engine.FirstFitMarked(ctx, a.pod, names, marks)
		if err != nil {
			return false, fmt.Errorf("checking pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		if found < 0 {
			found = len(direct)
		}
		if a.monotone {
			for _, cand := range direct[:found] {
				m.fail(cand.c.index)
			}
		}
		for i, mark := range marks[:min(found, len(marks))] {
			c := direct[i].c
			switch {
			case mark == simulation.RejectedBySpread && epoch != 0:
				m.spread[c.index] = spreadMark{epoch: epoch, labelsVersion: c.labelsVersion}
			case mark == simulation.RejectedForGood:
				m.forGood[c.index] = c.labelsVersion
			}
		}
		if found < len(direct) {
			return true, r.commit(ctx, pod, req, direct[found], direct[found].merged, direct[found].c.chosen)
		}
		direct, names = direct[:0], names[:0]
		chunk = min(2*chunk, maxChunk)
		return false, nil
	}
	for _, c := range order {
		if m.hasFailed(c.index) || m.spreadRejects(c, epoch) || m.rejectsForGood(c) {
			continue
		}
		cand, ok := r.admits(c, a, req, open)
		if !ok {
			m.fail(c.index) // requirements only narrow and requests only grow
			continue
		}
		if r.needsLabels(c, cand) {
			if c.inFlight == nil {
				relabel = append(relabel, cand)
			}
			continue
		}
		direct, names = append(direct, cand), append(names, c.name)
		if len(direct) == chunk {
			if placed, err := flush(); err != nil || placed {
				return placed, err
			}
		}
	}
	if len(direct) > 0 {
		if placed, err := flush(); err != nil || placed {
			return placed, err
		}
	}
	for _, cand := range relabel {
		placed, err := r.tryRelabel(ctx, pod, a, cand, req)
		if err != nil || placed {
			return placed, err
		}
		if a.monotone {
			m.fail(cand.c.index)
		}
	}
	return false, nil
}

// Chunks of direct candidates start small, since most pods fit one of the first claims, and
// grow so that a long scan still runs its Filters in parallel.
const (
	firstChunk = 8
	maxChunk   = 256
)

// admits checks, with the requirements algebra and resource arithmetic only, whether claim c
// could take attempt a; the Filters decide after.
func (r *run) admits(c *claim, a attempt, req vec, open openKeys) (candidate, bool) {
	requests := c.requests.plus(req)
	if !requests.fits(c.boundVec) {
		return candidate{}, false
	}
	cand := candidate{c: c, merged: c.reqs, its: c.its, open: open}
	if len(a.reqs) > 0 {
		cand.narrowed = true
		if c.reqs.Compatible(a.reqs, scheduling.WellKnownLabels) != nil {
			return candidate{}, false
		}
		cand.merged = c.reqs.Clone()
		for _, q := range a.reqs {
			cand.merged.Add(q)
		}
		// A NodeClaim in flight launches as it is: the pod must accept every node it may become.
		if c.inFlight != nil && !keepsAll(c.reqs, cand.merged, a.reqs) {
			return candidate{}, false
		}
		if !c.fixed {
			cand.its = c.its.Compatible(cand.merged)
		}
	}
	if c.fixed {
		return cand, true
	}
	if !r.alloc.anyFits(cand.its, requests) {
		return candidate{}, false
	}
	if len(a.reqs) > 0 && !r.minValuesOK(c.pool, cand.merged, cand.its) {
		return candidate{}, false
	}
	return cand, true
}

// minValuesOK holds a NodePool's minValues under the Strict policy.
func (r *run) minValuesOK(p *pool, reqs scheduling.Requirements, its cloudprovider.InstanceTypes) bool {
	if p == nil || r.s.opts.MinValuesPolicy != MinValuesStrict {
		return true
	}
	return its.MinValuesShortfall(reqs) == nil
}

// openKeys are the label keys an attempt's Filters look at on a node.
type openKeys struct {
	// decide are topology keys (the attempt's spread, pod (anti-)affinity and volume keys,
	// other pods' required anti-affinity keys, and keys its requirements constrain that some
	// pod counts domains by): the node carries the one value its NodeClaim is narrowed to.
	decide []string
	// choose are the other keys its requirements constrain: the node carries one allowed
	// value (claim.chosen) and the NodeClaim keeps every value the requirements allow.
	choose []string
}

// key identifies the split, for memos.
func (o openKeys) key() string {
	return strings.Join(o.decide, ",") + "|" + strings.Join(o.choose, ",")
}

// openKeys splits the label keys the attempt's Filters look at (see openKeys). The hostname
// is always decided: it is the node's name.
func (r *run) openKeys(a attempt) openKeys {
	decide := slices.Clone(a.topologyKeys)
	var choose []string
	for key, q := range a.reqs {
		if q.AllowsAbsent() {
			continue
		}
		if r.isTopologyKey(key) {
			decide = append(decide, key)
		} else {
			choose = append(choose, key)
		}
	}
	for key := range r.antiAffinityKeys {
		decide = append(decide, key)
	}
	return openKeys{decide: sortedKeys(decide), choose: sortedKeys(choose)}
}

// sortedKeys sorts and deduplicates keys, leaving out the hostname.
func sortedKeys(keys []string) []string {
	slices.Sort(keys)
	keys = slices.Compact(keys)
	return slices.DeleteFunc(keys, func(k string) bool { return k == corev1.LabelHostname })
}

// keepsAll reports whether merged, the claim's requirements before with the attempt's
// requirements added, still allows every value before allows on each key the attempt
// constrains. It answers false when it cannot tell (a complement that changed).
func keepsAll(before, merged, attemptReqs scheduling.Requirements) bool {
	for key := range attemptReqs {
		was, now := before[key], merged[key]
		if was == now {
			continue
		}
		if was == nil {
			return false
		}
		if _, ok := finite(was); !ok || now.Len() != was.Len() {
			return false
		}
	}
	return true
}

// decided reports whether reqs holds a node to exactly one value of key.
func decided(reqs scheduling.Requirements, key string) bool {
	q, ok := reqs[key]
	return ok && !q.AllowsAbsent() && q.Len() == 1
}

// needsLabels reports whether the claim's node must change before the Filters can judge the
// attempt: a label merged decides or allows differs from the node's, a topology key the
// attempt looks at is not decided, or a key its requirements constrain has no value.
func (r *run) needsLabels(c *claim, cand candidate) bool {
	merged, open := cand.merged, cand.open
	current := c.currentLabels()
	desired := current
	if cand.narrowed && !sameRequirements(merged, c.reqs) {
		desired = nodeLabels(merged, c.chosen)
		if len(desired) != len(current) {
			return true
		}
		for k, v := range desired {
			if current[k] != v {
				return true
			}
		}
	}
	for _, k := range open.decide {
		if !decided(merged, k) {
			return true
		}
	}
	for _, k := range open.choose {
		if _, ok := desired[k]; !ok {
			return true
		}
	}
	return false
}

// tryRelabel narrows the claim's open labels to each candidate value in turn and keeps the
// first the Filters accept.
func (r *run) tryRelabel(ctx context.Context, pod *corev1.Pod, a attempt, cand candidate, req vec) (bool, error) {
	c := cand.c
	requests := c.requests.plus(req)
	for _, reqs := range r.combinations(cand.merged, cand.its, cand.open.decide) {
		its := cand.its.Compatible(reqs)
		if !r.alloc.anyFits(its, requests) || !r.minValuesOK(c.pool, reqs, its) {
			continue
		}
		chosen := chooseValues(reqs, its, cand.open.choose, c.chosen)
		r.engine.Fork()
		if err := r.engine.Snapshot().ReplaceNode(c.node(reqs, chosen)); err != nil {
			return false, err
		}
		if r.engine.CheckPredicates(ctx, a.pod, c.name).IsSuccess() {
			if err := r.engine.Commit(); err != nil {
				return false, err
			}
			cand.its = its
			return true, r.commit(ctx, pod, req, cand, reqs, chosen)
		}
		if err := r.engine.Revert(); err != nil {
			return false, err
		}
	}
	return false, nil
}

// maxCombinations bounds the label combinations tried for one claim.
const maxCombinations = 32

// combinations returns reqs with each key of decide that reqs leaves multi-valued narrowed
// to one value, in every combination (up to maxCombinations), values in sorted order.
func (r *run) combinations(reqs scheduling.Requirements, its cloudprovider.InstanceTypes, decide []string) []scheduling.Requirements {
	combos := []scheduling.Requirements{reqs}
	for _, key := range decide {
		if _, decided := reqs.Labels()[key]; decided {
			continue
		}
		var next []scheduling.Requirements
		for _, base := range combos {
			for _, v := range candidateValues(base, its, key) {
				narrowed := base.Clone()
				narrowed.Add(scheduling.NewRequirement(key, corev1.NodeSelectorOpIn, v))
				next = append(next, narrowed)
				if len(next) == maxCombinations {
					break
				}
			}
		}
		combos = next
	}
	return combos
}

// chooseValues picks the node's value for each key of keys that reqs leaves with several
// values, and keeps every value prior chose that reqs still leaves open and allows (an
// earlier pod's node affinity may need it); a new value is the first candidate value. Keys
// reqs decides need none. It returns nil when nothing is chosen.
func chooseValues(reqs scheduling.Requirements, its cloudprovider.InstanceTypes, keys []string, prior map[string]string) map[string]string {
	var chosen map[string]string
	set := func(key, value string) {
		if chosen == nil {
			chosen = map[string]string{}
		}
		chosen[key] = value
	}
	for key, v := range prior {
		if q, ok := reqs[key]; ok && !q.AllowsAbsent() && q.Len() > 1 && q.Has(v) {
			set(key, v)
		}
	}
	for _, key := range keys {
		q, ok := reqs[key]
		if !ok || q.AllowsAbsent() || q.Len() == 1 || chosen[key] != "" {
			continue
		}
		if values := candidateValues(reqs, its, key); len(values) > 0 {
			set(key, values[0])
		} // else no node can carry the key; the Filters will say so
	}
	return chosen
}

// candidateValues are the values key may take on a node meeting reqs: the values reqs lists,
// or for a well-known key those the instance types offer, or one chosen value for a custom
// key that only has to exist.
func candidateValues(reqs scheduling.Requirements, its cloudprovider.InstanceTypes, key string) []string {
	req := reqs.Get(key)
	if values, ok := finite(req); ok {
		return values
	}
	if isWellKnown(key) {
		seen := map[string]bool{}
		var out []string
		for _, it := range its {
			values, _ := finite(it.Requirements.Get(key))
			for _, v := range values {
				if !seen[v] && req.Has(v) {
					seen[v] = true
					out = append(out, v)
				}
			}
		}
		slices.Sort(out)
		return out
	}
	if v := req.Any(); v != "" {
		return []string{v}
	}
	return nil
}

// commit plans pod, which requests req, onto the claim the Filters accepted, with reqs its new
// requirements and chosen the values its node carries for keys reqs leaves open.
func (r *run) commit(ctx context.Context, pod *corev1.Pod, req vec, cand candidate, reqs scheduling.Requirements, chosen map[string]string) error {
	c := cand.c
	if status := r.engine.ScheduleChecked(ctx, pod, c.name); !status.IsSuccess() {
		return fmt.Errorf("planning pod %s/%s onto %s after its Filters passed: %w", pod.Namespace, pod.Name, c.name, status.AsError())
	}
	c.setRequirements(reqs, chosen)
	c.requests = c.requests.plus(req)
	if !c.fixed {
		c.its = r.alloc.fitting(cand.its, c.requests)
	}
	c.pods = append(c.pods, pod)
	if c.inFlight != nil {
		r.plan.InFlight[pod.UID] = c.inFlight.Name
	}
	r.noteAntiAffinity(pod)
	return nil
}

// poolFit is what a NodePool offers one attempt, whatever else the batch plans.
type poolFit struct {
	merged scheduling.Requirements
	its    cloudprovider.InstanceTypes
	why    string
}

func (r *run) poolFit(p *pool, a attempt, m *memo) *poolFit {
	if f, ok := m.pools[p]; ok {
		return f
	}
	f := &poolFit{}
	m.pools[p] = f
	for i := range p.np.Spec.Template.Spec.Taints {
		taint := &p.np.Spec.Template.Spec.Taints[i]
		if taint.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if !corev1helpers.TolerationsTolerateTaint(klog.Background(), a.pod.Spec.Tolerations, taint, false) {
			f.why = fmt.Sprintf("nodepool %q: taint %s not tolerated", p.np.Name, taint.ToString())
			return f
		}
	}
	if err := p.reqs.Compatible(a.reqs, scheduling.WellKnownLabels); err != nil {
		f.why = fmt.Sprintf("nodepool %q: incompatible requirements: %v", p.np.Name, err)
		return f
	}
	f.merged = p.reqs.Clone()
	for _, q := range a.reqs {
		f.merged.Add(q)
	}
	f.its = p.its
	if len(a.reqs) > 0 {
		f.its = p.its.Compatible(f.merged)
	}
	if len(f.its) == 0 {
		f.why = fmt.Sprintf("nodepool %q: no instance type meets the requirements %s", p.np.Name, f.merged)
		return f
	}
	if r.s.opts.MinValuesPolicy == MinValuesStrict {
		if err := f.its.MinValuesShortfall(f.merged); err != nil {
			f.why = fmt.Sprintf("nodepool %q: %v", p.np.Name, err)
		}
	}
	return f
}

// tryNew opens a new claim for pod from the first NodePool, by weight, whose node the Filters
// accept it on. It returns why none did.
func (r *run) tryNew(ctx context.Context, pod *corev1.Pod, a attempt, m *memo, open openKeys, req vec) (bool, string, error) {
	var reasons []string
	if len(r.pools) == 0 {
		return false, "no NodePool is ready", nil
	}
	for _, p := range r.pools {
		f := r.poolFit(p, a, m)
		if f.why != "" {
			reasons = append(reasons, f.why)
			continue
		}
		if !r.alloc.anyFits(f.its, req) {
			reasons = append(reasons, fmt.Sprintf("nodepool %q: no instance type fits the pod's requests (%s)", p.np.Name, describe(req.list())))
			continue
		}
		its := withinLimits(f.its, p.remaining())
		if !r.alloc.anyFits(its, req) {
			reasons = append(reasons, fmt.Sprintf("nodepool %q: limits reached", p.np.Name))
			continue
		}
		placed, why, err := r.tryNewOf(ctx, pod, a, m, open, p, f.merged, its, req)
		if err != nil || placed {
			return placed, "", err
		}
		reasons = append(reasons, fmt.Sprintf("nodepool %q: %s", p.np.Name, why))
	}
	return false, strings.Join(reasons, "; "), nil
}

// newShape is one combination of a new node's open labels: its requirements and the
// instance types and allocatable bound that go with them.
type newShape struct {
	reqs     scheduling.Requirements
	chosen   map[string]string
	its      cloudprovider.InstanceTypes
	bound    corev1.ResourceList
	boundVec vec
}

// newShapes lists the shapes a new node of NodePool p may take for an attempt. Without
// limits they depend only on the attempt and the open keys, so the pods of a class share
// them (memo.shapes); under limits its shrinks as claims are added, so they are computed
// each time.
func (r *run) newShapes(m *memo, p *pool, merged scheduling.Requirements, its cloudprovider.InstanceTypes, open openKeys, limited bool) []newShape {
	key := open.key()
	if !limited {
		if shapes, ok := m.shapes[p][key]; ok {
			return shapes
		}
	}
	var shapes []newShape
	for _, reqs := range r.combinations(merged, its, open.decide) {
		narrowed := its
		if len(reqs) != len(merged) {
			narrowed = its.Compatible(reqs)
		}
		if len(narrowed) == 0 || !r.minValuesOK(p, reqs, narrowed) {
			continue
		}
		bound := maxAllocatable(narrowed)
		chosen := chooseValues(reqs, narrowed, open.choose, nil)
		shapes = append(shapes, newShape{reqs: reqs, chosen: chosen, its: narrowed, bound: bound, boundVec: toVec(bound)})
	}
	if !limited {
		if m.shapes[p] == nil {
			m.shapes[p] = map[string][]newShape{}
		}
		m.shapes[p][key] = shapes
	}
	return shapes
}

// tryNewOf tries a new node of NodePool p for each combination of the open labels.
func (r *run) tryNewOf(ctx context.Context, pod *corev1.Pod, a attempt, m *memo, open openKeys, p *pool, merged scheduling.Requirements, its cloudprovider.InstanceTypes, req vec) (bool, string, error) {
	why := "no instance type fits the pod with its daemons"
	limited := len(p.np.Spec.Limits) > 0 // p.remaining() is non-nil; no need to recompute it
	for _, shape := range r.newShapes(m, p, merged, its, open, limited) {
		c := &claim{name: r.nextName("joinery-planned"), pool: p, reqs: shape.reqs, chosen: shape.chosen, taints: p.np.Spec.Template.Spec.Taints}
		c.bound, c.boundVec = shape.bound, shape.boundVec
		r.engine.Fork()
		if err := r.engine.Snapshot().AddNode(c.node(shape.reqs, shape.chosen)); err != nil {
			return false, "", err
		}
		daemons, err := addDaemons(ctx, r.engine, r.daemons, c.name)
		if err != nil {
			return false, "", err
		}
		c.requests = daemons
		if r.alloc.anyFits(shape.its, daemons.plus(req)) {
			status := r.engine.CheckPredicates(ctx, a.pod, c.name)
			if status.IsSuccess() {
				if err := r.engine.Commit(); err != nil {
					return false, "", err
				}
				c.index = len(r.claims)
				r.claims = append(r.claims, c)
				p.claims = append(p.claims, c)
				// commit narrows the types to those that hold the daemons and the pod.
				return true, "", r.commit(ctx, pod, req, candidate{c: c, merged: shape.reqs, its: shape.its}, shape.reqs, shape.chosen)
			}
			why = status.Message()
			if plugin := status.Plugin(); plugin != "" {
				why = plugin + ": " + why
			}
		}
		if err := r.engine.Revert(); err != nil {
			return false, "", err
		}
	}
	return false, why, nil
}

// describe formats resources as "cpu=4, memory=1Gi, pods=1", sorted by name.
func describe(list corev1.ResourceList) string {
	names := make([]string, 0, len(list))
	for name := range list {
		names = append(names, string(name))
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, name := range names {
		q := list[corev1.ResourceName(name)]
		parts[i] = name + "=" + q.String()
	}
	return strings.Join(parts, ", ")
}

// sameRequirements reports whether a and b hold the same requirement objects (requirements
// are immutable, so an unchanged key keeps its pointer).
func sameRequirements(a, b scheduling.Requirements) bool {
	if len(a) != len(b) {
		return false
	}
	for k, q := range a {
		if b[k] != q {
			return false
		}
	}
	return true
}
