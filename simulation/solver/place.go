package solver

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/scheduling"
	"github.com/joinery-dev/joinery/simulation"
)

// place plans pod: onto a claim of the batch or in flight when the Filters allow, else onto a
// new claim from the first NodePool that can host it; strictest attempt first.
func (r *run) place(ctx context.Context, pod *corev1.Pod) error {
	if placed, err := r.tryInitializing(ctx, pod); err != nil || placed {
		return err
	}
	req := podVec(pod)
	var reasons []simulation.NodePoolReason
	// failed holds the preference sets the pod did not fit with: a superset cannot fit either
	// (each kept preference is one more required constraint), so it is not tried.
	var failed []uint64
	for _, a := range r.s.attempts(pod, r.pools) {
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
		if m.noNew != nil {
			reasons = m.noNew
			continue
		}
		placed, why, err := r.tryNew(ctx, pod, a, m, open, req)
		if err != nil || placed {
			return err
		}
		if a.monotone {
			m.noNew = why
		}
		reasons = why
	}
	r.unschedulable(pod, append(slices.Clip(reasons), r.skipped...))
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
	// A pod's earlier in-flight NodeClaim first; then the claims with room for it, in order.
	order := r.claimsWithRoom(r.plannedOn[pod.UID], req)
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
		if !m.affinityKnown {
			m.affinity, m.affinityKnown = r.affinityRuleOf(a.pod), true
		}
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
				m.markSpread(c, epoch)
			case mark == simulation.RejectedForGood:
				m.markForGood(c)
			case mark == simulation.RejectedByAffinity:
				r.noteAffinityRejection(m.affinity, c)
			}
		}
		if found < len(direct) {
			return true, r.commit(ctx, pod, req, direct[found], direct[found].merged, direct[found].c.chosen)
		}
		direct, names = direct[:0], names[:0]
		chunk = min(2*chunk, maxChunk)
		return false, nil
	}
	for c := range order {
		if m.hasFailed(c.index) || m.spreadRejects(c, epoch) || m.rejectsForGood(c) || r.affinityRejects(m.affinity, c) {
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
	// The Filters ignore PreferNoSchedule; the solver keeps such a node for the pods that
	// tolerate it until the taint is relaxed (see softTaintWeight).
	if a.avoidSoftTaints && untoleratedSoftTaint(c.taints, a.pod) != nil {
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
	if cand.narrowed && !r.alloc.anyFits(cand.its, requests) || !cand.narrowed && !anyHolds(r.frontierOf(c), requests) {
		return candidate{}, false
	}
	if vols := r.podCSIVolumes(a.pod); len(vols) > 0 && !r.anyAttaches(cand.its, requests, c.attachCounts(vols)) {
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

// commit plans pod, which requests req, onto the claim the Filters accepted, with reqs its new
// requirements and chosen the values its node carries for keys reqs leaves open.
func (r *run) commit(ctx context.Context, pod *corev1.Pod, req vec, cand candidate, reqs scheduling.Requirements, chosen map[string]string) error {
	c := cand.c
	if status := r.engine.ScheduleChecked(ctx, pod, c.name); !status.IsSuccess() {
		return fmt.Errorf("planning pod %s/%s onto %s after its Filters passed: %w", pod.Namespace, pod.Name, c.name, status.AsError())
	}
	c.setRequirements(reqs, chosen)
	c.requests = c.requests.plus(req)
	c.addVolumes(r.podCSIVolumes(pod))
	if !c.fixed {
		prev := c.its
		c.its = attaching(r.alloc.fitting(cand.its, c.requests), c.attachCount)
		// The frontier follows when only types too small for the requests were dropped:
		// not when the candidate's types were narrowed by requirements or attach limits.
		if len(c.attachCount) == 0 && len(cand.its) == len(prev) && len(prev) > 0 && &cand.its[0] == &prev[0] {
			c.keepFrontier(prev)
		}
		if len(c.volumes) > 0 {
			r.refreshVolumeLimits(c)
		}
	}
	c.pods = append(c.pods, pod)
	r.noteRoom(c)
	r.notePodAdded(c.domain)
	if c.inFlight != nil {
		r.plan.InFlight[pod.UID] = c.inFlight.Name
	}
	r.noteAntiAffinity(pod)
	return nil
}
