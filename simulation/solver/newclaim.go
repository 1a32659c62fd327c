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

// poolFit is what a NodePool offers one attempt, whatever else the batch plans.
type poolFit struct {
	merged scheduling.Requirements
	its    cloudprovider.InstanceTypes
	// why, when not nil, is why the NodePool cannot take the attempt.
	why *simulation.NodePoolReason
}

func (r *run) poolFit(p *pool, a attempt, m *memo) *poolFit {
	if f, ok := m.pools[p]; ok {
		return f
	}
	f := &poolFit{}
	m.pools[p] = f
	fail := func(kind simulation.ReasonKind, format string, args ...any) *poolFit {
		why := poolReason(p.np.Name, kind, fmt.Sprintf(format, args...))
		f.why = &why
		return f
	}
	for i := range p.np.Spec.Template.Spec.Taints {
		taint := &p.np.Spec.Template.Spec.Taints[i]
		if taint.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if !corev1helpers.TolerationsTolerateTaint(klog.Background(), a.pod.Spec.Tolerations, taint, false) {
			return fail(simulation.ReasonRequirements, "taint %s not tolerated", taint.ToString())
		}
	}
	if a.avoidSoftTaints {
		if taint := untoleratedSoftTaint(p.np.Spec.Template.Spec.Taints, a.pod); taint != nil {
			return fail(simulation.ReasonRequirements, "taint %s not tolerated (relaxed last)", taint.ToString())
		}
	}
	if err := p.reqs.Compatible(a.reqs, scheduling.WellKnownLabels); err != nil {
		return fail(simulation.ReasonRequirements, "incompatible requirements: %v", err)
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
		kind := simulation.ReasonRequirements
		if onlyUnavailable(p.offered, f.merged) {
			kind = simulation.ReasonUnavailableOfferings
		}
		return fail(kind, "no instance type meets the requirements %s", f.merged)
	}
	if r.s.opts.MinValuesPolicy == MinValuesStrict {
		if err := f.its.MinValuesShortfall(f.merged); err != nil {
			return fail(simulation.ReasonRequirements, "%v", err)
		}
	}
	return f
}

// untoleratedSoftTaint returns the first PreferNoSchedule taint of taints that pod does not
// tolerate, or nil.
func untoleratedSoftTaint(taints []corev1.Taint, pod *corev1.Pod) *corev1.Taint {
	for i := range taints {
		taint := &taints[i]
		if taint.Effect == corev1.TaintEffectPreferNoSchedule && !corev1helpers.TolerationsTolerateTaint(klog.Background(), pod.Spec.Tolerations, taint, false) {
			return taint
		}
	}
	return nil
}

// onlyUnavailable reports whether some instance type of its meets reqs through an offering
// that is only known not to launch: were it available, reqs would leave types.
func onlyUnavailable(its cloudprovider.InstanceTypes, reqs scheduling.Requirements) bool {
	for _, it := range its {
		if it.Requirements.Intersects(reqs) != nil {
			continue
		}
		for _, o := range it.Offerings {
			if !o.Available && o.CompatibleWith(reqs) {
				return true
			}
		}
	}
	return false
}

// tryNew opens a new claim for pod from the first NodePool, by weight, whose node the Filters
// accept it on. It returns why none did, NodePool by NodePool.
func (r *run) tryNew(ctx context.Context, pod *corev1.Pod, a attempt, m *memo, open openKeys, req vec) (bool, []simulation.NodePoolReason, error) {
	var reasons []simulation.NodePoolReason
	if len(r.pools) == 0 {
		return false, []simulation.NodePoolReason{noPoolReady}, nil
	}
	for _, p := range r.pools {
		if p.np.Spec.Replicas != nil {
			// A static NodePool's count is its replicas: pods may land on its nodes, but only
			// the static controller adds NodeClaims to it.
			reasons = append(reasons, simulation.NodePoolReason{NodePool: p.np.Name, Kind: simulation.ReasonStatic,
				Message: "is static (spec.replicas)", Text: fmt.Sprintf("nodepool %q is static (spec.replicas)", p.np.Name)})
			continue
		}
		f := r.poolFit(p, a, m)
		if f.why != nil {
			reasons = append(reasons, *f.why)
			continue
		}
		if !r.alloc.anyFits(f.its, req) {
			reasons = append(reasons, poolReason(p.np.Name, simulation.ReasonNoInstanceType, fmt.Sprintf("no instance type fits the pod's requests (%s)", describe(req.list()))))
			continue
		}
		its := withinLimits(f.its, p.remaining())
		if !r.alloc.anyFits(its, req) {
			reasons = append(reasons, poolReason(p.np.Name, simulation.ReasonLimits, "limits reached"))
			continue
		}
		placed, why, err := r.tryNewOf(ctx, pod, a, m, open, p, f.merged, its, req)
		if err != nil || placed {
			return placed, nil, err
		}
		reasons = append(reasons, poolReason(p.np.Name, simulation.ReasonNoInstanceType, why))
	}
	return false, reasons, nil
}

// newShape is one combination of a new node's open labels: its requirements and the
// instance types and allocatable bound that go with them.
type newShape struct {
	reqs     scheduling.Requirements
	chosen   map[string]string
	its      cloudprovider.InstanceTypes
	bound    corev1.ResourceList
	boundVec vec
	limits   map[string]int32
	devices  []cloudprovider.DeviceSet
}

// newShapes lists the shapes a new node of NodePool p may take for an attempt. Without
// limits they depend only on the attempt and the open keys, so the pods of a class share
// them (memo.shapes); under limits its shrinks as claims are added, so they are computed
// each time.
//
// For a pod with resource claims (devices), each shape holds the types of one set of devices
// (byDevices), and its node publishes their ResourceSlices: DynamicResources then accepts the
// node only if those devices satisfy the claims, and the NodeClaim launches a type that has
// them. A pod's class is its own (EquivalenceKey), so the memo keeps these shapes apart.
func (r *run) newShapes(m *memo, p *pool, merged scheduling.Requirements, its cloudprovider.InstanceTypes, open openKeys, limited, devices bool) []newShape {
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
		groups := []cloudprovider.InstanceTypes{narrowed}
		if devices {
			groups = byDevices(narrowed)
		}
		for _, group := range groups {
			bound := maxAllocatable(group)
			chosen := chooseValues(reqs, group, open.choose, nil)
			shapes = append(shapes, newShape{reqs: reqs, chosen: chosen, its: group, bound: bound, boundVec: toVec(bound),
				limits: maxVolumeLimits(group), devices: sameDevices(group)})
		}
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
	devices := len(pod.Spec.ResourceClaims) > 0 && !r.s.opts.IgnoreDRARequests
	if devices {
		// Replaced by DynamicResources' own reason when some type has devices.
		why = "DynamicResources: no instance type has devices for the pod's resource claims"
	}
	limited := len(p.np.Spec.Limits) > 0 // p.remaining() is non-nil; no need to recompute it
	for _, shape := range r.newShapes(m, p, merged, its, open, limited, devices) {
		c := &claim{name: r.nextName("joinery-planned"), pool: p, reqs: shape.reqs, chosen: shape.chosen, taints: p.np.Spec.Template.Spec.Taints}
		c.bound, c.boundVec, c.limits, c.devices = shape.bound, shape.boundVec, shape.limits, shape.devices
		r.engine.Fork()
		if _, err := r.engine.Snapshot().AddHypotheticalNode(c.node(shape.reqs, shape.chosen)); err != nil {
			return false, "", err
		}
		daemons, err := addDaemons(ctx, r.engine, r.daemons, c.name)
		if err != nil {
			return false, "", err
		}
		c.requests = daemons
		vols := r.podCSIVolumes(pod)
		if r.alloc.anyFits(shape.its, daemons.plus(req)) && (len(vols) == 0 || r.anyAttaches(shape.its, daemons.plus(req), c.attachCounts(vols))) {
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
