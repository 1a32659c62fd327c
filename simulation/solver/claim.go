package solver

import (
	"maps"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/scheduling"
	"github.com/joinery-dev/joinery/simulation"
)

// claim is a NodeClaim in progress, in the snapshot as a hypothetical node: a requirement set,
// the instance types still possible, and the pods planned onto it. It is either new in this
// batch (pool set) or an existing NodeClaim still launching (inFlight set), whose spec can no
// longer change.
type claim struct {
	index    int
	name     string // the hypothetical node's name
	pool     *pool
	inFlight *karpv1.NodeClaim

	reqs   scheduling.Requirements
	its    cloudprovider.InstanceTypes // fit requests, in the pool's price order
	taints []corev1.Taint
	// bound is the allocatable the Filters see: an upper bound over its (or the launched
	// NodeClaim's allocatable). The solver's arithmetic narrows its; the bound stays, so that
	// the Filters never reject for resources what some remaining type would hold.
	bound    corev1.ResourceList
	boundVec vec
	// fixed is set for an in-flight NodeClaim that reported its allocatable.
	fixed bool
	// limits are the attach limits by CSI driver its node's CSINode shows: the largest of its
	// (see attach.go). volumes are the CSI volumes planned onto it ("driver/handle" → driver),
	// attachCount their number per driver.
	limits map[string]int32
	// devices are the devices its node's ResourceSlices show: those of its when they all
	// have the same (see sameDevices), else none, so that DynamicResources never allocates a
	// claim from devices some remaining type lacks.
	devices     []cloudprovider.DeviceSet
	volumes     map[string]string
	attachCount map[string]int32

	requests vec // pods and daemons
	// frontier caches, for its with backing array frontierAt and length frontierLen, the
	// allocatables of its that no other type's dominates: some type holds a pod exactly when
	// one of these does. admits asks that for every claim it visits; scanning every type
	// was most of it.
	frontier    []vec
	frontierAt  **cloudprovider.InstanceType
	frontierLen int
	pods        []*corev1.Pod
	// chosen are values the node carries for keys reqs leaves with several values, because
	// some pod's node affinity needs the label to exist; the NodeClaim keeps the whole set.
	// Never a topology key (run.isTopologyKey): nothing counts a node by a chosen value.
	chosen map[string]string
	// current caches nodeLabels(reqs, chosen).
	current map[string]string
	// labelsVersion counts the changes of reqs, so marks made for the node's old labels
	// (memo.spread) are recognised as outdated.
	labelsVersion int
	// domainIDs are the claim's topology domains (run.claimDomains) for labels version
	// domainsAt-1.
	domainIDs []int
	domainsAt int
}

// currentLabels are the labels of the claim's node as it is in the snapshot.
func (c *claim) currentLabels() map[string]string {
	if c.current == nil {
		c.current = nodeLabels(c.reqs, c.chosen)
	}
	return c.current
}

// setRequirements narrows the claim's requirements and sets its chosen values (its node was
// updated to match).
func (c *claim) setRequirements(reqs scheduling.Requirements, chosen map[string]string) {
	if !sameRequirements(reqs, c.reqs) || !maps.Equal(chosen, c.chosen) {
		c.labelsVersion++
	}
	c.reqs, c.chosen = reqs, chosen
	c.current = nil
}

// node describes the node (and its CSINode) the Filters see for reqs and chosen values.
func (c *claim) node(reqs scheduling.Requirements, chosen map[string]string) simulation.NodeTemplate {
	return simulation.NodeTemplate{
		Name:         c.name,
		Labels:       nodeLabels(reqs, chosen),
		Taints:       c.taints,
		Allocatable:  c.bound,
		VolumeLimits: c.limits,
		Devices:      c.devices,
	}
}

// sameDevices returns the devices every type of its has, or nil when they differ.
func sameDevices(its cloudprovider.InstanceTypes) []cloudprovider.DeviceSet {
	if len(its) == 0 {
		return nil
	}
	key := cloudprovider.DevicesKey(its[0].Devices)
	for _, it := range its[1:] {
		if cloudprovider.DevicesKey(it.Devices) != key {
			return nil
		}
	}
	return its[0].Devices
}

// byDevices splits its, in order, into groups of types with the same devices, ordered by
// their first type; types without devices are left out. A pod with resource claims opens a
// node of one group, whose slices DynamicResources then allocates from exactly.
func byDevices(its cloudprovider.InstanceTypes) []cloudprovider.InstanceTypes {
	var groups []cloudprovider.InstanceTypes
	index := map[string]int{}
	for _, it := range its {
		if len(it.Devices) == 0 {
			continue
		}
		key := cloudprovider.DevicesKey(it.Devices)
		i, ok := index[key]
		if !ok {
			i = len(groups)
			index[key] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], it)
	}
	return groups
}

// nodeLabels are the labels of a node meeting reqs: one per key reqs decides, and the chosen
// value of each other key that reqs still allows it for.
func nodeLabels(reqs scheduling.Requirements, chosen map[string]string) map[string]string {
	labels := reqs.Labels()
	for k, v := range chosen {
		if _, decided := labels[k]; decided {
			continue
		}
		if q, ok := reqs[k]; ok && !q.AllowsAbsent() && q.Has(v) {
			labels[k] = v
		}
	}
	return labels
}
