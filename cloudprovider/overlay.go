package cloudprovider

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/apis/karpenter/v1alpha1"
	"github.com/joinery-dev/joinery/scheduling"
)

// Overlay changes a provider's instance types before anything plans, prices or launches with
// them (NodeOverlay). A provider calls Apply in its one listing of instance types, so that
// GetInstanceTypes and Create see the same catalog. nil means no overlay.
type Overlay interface {
	// Apply returns its as the NodePool named nodePool ("" for none) sees them. Instance types
	// no overlay changes are returned as they are; changed ones are copies.
	Apply(nodePool string, its InstanceTypes) InstanceTypes
}

// overheadResources are the resources whose capacity overlay value is the node's own overhead
// for that resource (what it reserves for the system), not capacity: an instance type's cpu and
// memory come from the provider, the share the system keeps is what users tune.
var overheadResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage}

// compiledOverlay is a NodeOverlay parsed once for matching and arithmetic.
type compiledOverlay struct {
	name   string
	weight int32
	reqs   scheduling.Requirements
	price  *priceChange
	// capacity is spec.capacity: overhead for overheadResources, capacity for the rest.
	capacity corev1.ResourceList
	// devices replace the matching types' devices when setsDevices (from the
	// DevicesAnnotationKey annotation; an empty list removes them).
	devices     []DeviceSet
	setsDevices bool
}

// priceChange is spec.price (absolute) or spec.priceAdjustment (delta or percent).
type priceChange struct {
	spec     string // as written, for messages
	absolute bool   // price: replace
	percent  bool   // priceAdjustment ending in %
	value    float64
}

// apply returns price changed, never below zero.
func (c *priceChange) apply(price float64) float64 {
	var out float64
	switch {
	case c.absolute:
		out = c.value
	case c.percent:
		out = price * (1 + c.value/100)
	default:
		out = price + c.value
	}
	return math.Max(0, out)
}

func (c *priceChange) equal(o *priceChange) bool {
	return c.absolute == o.absolute && c.percent == o.percent && c.value == o.value
}

// compileOverlay parses o; an error names the field at fault.
func compileOverlay(o *v1alpha1.NodeOverlay) (*compiledOverlay, error) {
	c := &compiledOverlay{name: o.Name, reqs: scheduling.NewRequirements()}
	if o.Spec.Weight != nil {
		c.weight = *o.Spec.Weight
	}
	for i, r := range o.Spec.Requirements {
		req := scheduling.NewRequirement(scheduling.NormalizeLabelKey(r.Key), r.Operator, r.Values...)
		if !req.Satisfiable() && !req.AllowsAbsent() {
			return nil, fmt.Errorf("spec.requirements[%d]: %s %s %v matches no label value", i, r.Key, r.Operator, r.Values)
		}
		c.reqs.Add(req)
	}
	switch {
	case o.Spec.Price != nil && o.Spec.PriceAdjustment != nil:
		return nil, fmt.Errorf("spec.price and spec.priceAdjustment are mutually exclusive")
	case o.Spec.Price != nil:
		v, err := strconv.ParseFloat(*o.Spec.Price, 64)
		if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, fmt.Errorf("spec.price %q is not a non-negative decimal", *o.Spec.Price)
		}
		c.price = &priceChange{spec: "price " + *o.Spec.Price, absolute: true, value: v}
	case o.Spec.PriceAdjustment != nil:
		pc, err := parsePriceAdjustment(*o.Spec.PriceAdjustment)
		if err != nil {
			return nil, err
		}
		c.price = pc
	}
	for name, q := range o.Spec.Capacity {
		if q.Sign() < 0 {
			return nil, fmt.Errorf("spec.capacity[%s] is negative: %s", name, q.String())
		}
	}
	if len(o.Spec.Capacity) > 0 {
		c.capacity = o.Spec.Capacity.DeepCopy()
	}
	if value, ok := o.Annotations[DevicesAnnotationKey]; ok {
		devices, err := ParseDevices(value)
		if err != nil {
			return nil, fmt.Errorf("annotation %s: %w", DevicesAnnotationKey, err)
		}
		c.devices, c.setsDevices = devices, true
	}
	return c, nil
}

// parsePriceAdjustment parses a priceAdjustment: a signed decimal ("+0.1", "-0.05") added to
// the price, or a signed percentage ("-10%", "+5%") of it.
func parsePriceAdjustment(s string) (*priceChange, error) {
	body, percent := strings.CutSuffix(s, "%")
	if len(body) < 2 || (body[0] != '+' && body[0] != '-') {
		return nil, fmt.Errorf("spec.priceAdjustment %q: want a signed decimal (+0.1, -0.05) or a signed percentage (-10%%)", s)
	}
	v, err := strconv.ParseFloat(body, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return nil, fmt.Errorf("spec.priceAdjustment %q: want a signed decimal (+0.1, -0.05) or a signed percentage (-10%%)", s)
	}
	if percent && v < -100 {
		return nil, fmt.Errorf("spec.priceAdjustment %q: a price cannot drop by more than 100%%", s)
	}
	return &priceChange{spec: "priceAdjustment " + s, percent: percent, value: v}, nil
}

// overlayConflict is one overlay losing a field to another of the same weight with a
// different value.
type overlayConflict struct {
	loser, winner, field string
}

// evaluation is the outcome of applying a set of overlays to one NodePool's instance types.
type evaluation struct {
	its       InstanceTypes
	conflicts []overlayConflict
}

// evaluate applies overlays (sorted by weight, then name) to its for nodePool. Each field
// (the price, each capacity resource, the devices) takes the value of the highest-weight
// matching overlay; among equal weights the alphabetically first wins and every other with a
// different value is reported as a conflict. An overlay matches an offering when the
// offering's labels (the type's, the offering's zone and capacity type, karpenter.sh/nodepool)
// meet all of its requirements; labels the type does not carry meet only NotIn and
// DoesNotExist. Capacity and devices apply to a type when the overlay matches any of its
// offerings.
func evaluate(overlays []*compiledOverlay, nodePool string, its InstanceTypes) evaluation {
	var ev evaluation
	if len(overlays) == 0 {
		ev.its = its
		return ev
	}
	ev.its = make(InstanceTypes, len(its))
	seen := map[overlayConflict]bool{}
	report := func(cs []overlayConflict) {
		for _, c := range cs {
			if !seen[c] {
				seen[c] = true
				ev.conflicts = append(ev.conflicts, c)
			}
		}
	}
	var pool *scheduling.Requirement
	if nodePool != "" {
		pool = scheduling.NewRequirement(karpv1.NodePoolLabelKey, corev1.NodeSelectorOpIn, nodePool)
	}
	for i, it := range its {
		// Which overlays match which offering; capacity goes to overlays matching any. An
		// overlay that names none of an offering's keys (zone, capacity type) matches every
		// offering of the type alike, so the type's requirements decide once.
		typeMatch := make([]bool, len(overlays))
		for k, ov := range overlays {
			typeMatch[k] = matches(ov.reqs, it.Requirements, nil, pool)
		}
		var typeMatched []*compiledOverlay
		var offerings Offerings
		for j, o := range it.Offerings {
			var matched []*compiledOverlay
			for k, ov := range overlays {
				match := typeMatch[k]
				if namesAny(ov.reqs, o.Requirements) {
					match = matches(ov.reqs, it.Requirements, o.Requirements, pool)
				}
				if match {
					matched = append(matched, ov)
					if !slices.Contains(typeMatched, ov) {
						typeMatched = append(typeMatched, ov)
					}
				}
			}
			winner, conflicts := pickPrice(matched)
			report(conflicts)
			if winner == nil {
				continue
			}
			if price := winner.price.apply(o.Price); price != o.Price {
				if offerings == nil {
					offerings = slices.Clone(it.Offerings)
				}
				changed := *o
				changed.Price = price
				offerings[j] = &changed
			}
		}
		if len(it.Offerings) == 0 {
			for k, ov := range overlays {
				if typeMatch[k] {
					typeMatched = append(typeMatched, ov)
				}
			}
		}
		slices.SortFunc(typeMatched, byWeightThenName)
		capacity, conflicts := pickCapacity(typeMatched)
		report(conflicts)
		devices, conflicts := pickDevices(typeMatched)
		report(conflicts)
		ev.its[i] = withOverlay(it, offerings, capacity, devices)
	}
	return ev
}

// matches reports whether a node with the labels of an offering meets every requirement of
// want: a key's label comes from the offering (offering may be nil for the type as a whole),
// else the type, else, for karpenter.sh/nodepool, the NodePool (pool, nil for none); a label
// none of them has meets only requirements that allow its absence.
func matches(want, typeReqs, offering scheduling.Requirements, pool *scheduling.Requirement) bool {
	for key, w := range want {
		have, ok := offering[key]
		if !ok {
			have, ok = typeReqs[key]
		}
		if !ok && key == karpv1.NodePoolLabelKey && pool != nil {
			have, ok = pool, true
		}
		if ok && !have.Intersects(w) || !ok && !w.AllowsAbsent() {
			return false
		}
	}
	return true
}

// namesAny reports whether reqs constrains any key of other.
func namesAny(reqs, other scheduling.Requirements) bool {
	for key := range reqs {
		if _, ok := other[key]; ok {
			return true
		}
	}
	return false
}

func byWeightThenName(a, b *compiledOverlay) int {
	return cmp.Or(cmp.Compare(b.weight, a.weight), cmp.Compare(a.name, b.name))
}

// pickPrice returns the overlay whose price change wins among matched (sorted by weight,
// then name) and the conflicts among the winner's weight.
func pickPrice(matched []*compiledOverlay) (*compiledOverlay, []overlayConflict) {
	var winner *compiledOverlay
	var conflicts []overlayConflict
	for _, ov := range matched {
		if ov.price == nil {
			continue
		}
		if winner == nil {
			winner = ov
			continue
		}
		if ov.weight != winner.weight {
			break
		}
		if !ov.price.equal(winner.price) {
			conflicts = append(conflicts, overlayConflict{loser: ov.name, winner: winner.name, field: "price"})
		}
	}
	return winner, conflicts
}

// pickCapacity merges the capacity of matched (sorted by weight, then name) per resource.
func pickCapacity(matched []*compiledOverlay) (corev1.ResourceList, []overlayConflict) {
	var out corev1.ResourceList
	var conflicts []overlayConflict
	winners := map[corev1.ResourceName]*compiledOverlay{}
	for _, ov := range matched {
		for _, name := range sortedResourceNames(ov.capacity) {
			q := ov.capacity[name]
			w, ok := winners[name]
			if !ok {
				winners[name] = ov
				if out == nil {
					out = corev1.ResourceList{}
				}
				out[name] = q
				continue
			}
			if ov.weight == w.weight && q.Cmp(out[name]) != 0 {
				conflicts = append(conflicts, overlayConflict{loser: ov.name, winner: w.name, field: "capacity " + string(name)})
			}
		}
	}
	return out, conflicts
}

// pickDevices returns the overlay among matched (sorted by weight, then name) whose devices
// win (nil when none sets them) and the conflicts among the winner's weight.
func pickDevices(matched []*compiledOverlay) (*compiledOverlay, []overlayConflict) {
	var winner *compiledOverlay
	var conflicts []overlayConflict
	for _, ov := range matched {
		if !ov.setsDevices {
			continue
		}
		if winner == nil {
			winner = ov
			continue
		}
		if ov.weight != winner.weight {
			break
		}
		if DevicesKey(ov.devices) != DevicesKey(winner.devices) {
			conflicts = append(conflicts, overlayConflict{loser: ov.name, winner: winner.name, field: "devices"})
		}
	}
	return winner, conflicts
}

func sortedResourceNames(list corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(list))
	for name := range list {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// withOverlay returns it with offerings (when not nil), capacity and the devices of devices
// (when not nil) applied, or it itself when nothing changes. Everything else is the type's.
func withOverlay(it *InstanceType, offerings Offerings, capacity corev1.ResourceList, devices *compiledOverlay) *InstanceType {
	capacityChanges := changesCapacity(it, capacity)
	devicesChange := devices != nil && DevicesKey(devices.devices) != DevicesKey(it.Devices)
	if offerings == nil && !capacityChanges && !devicesChange {
		return it
	}
	if offerings == nil {
		offerings = it.Offerings
	}
	out := it.WithOfferings(offerings)
	if capacityChanges {
		out.Capacity, out.Overhead = applyCapacity(it, capacity)
	}
	if devicesChange {
		out.Devices = slices.Clone(devices.devices)
	}
	return out
}

// changesCapacity reports whether applyCapacity would change anything.
func changesCapacity(it *InstanceType, capacity corev1.ResourceList) bool {
	total := it.Overhead.Total()
	for name, q := range capacity {
		have, ok := it.Capacity[name]
		if slices.Contains(overheadResources, name) {
			have, ok = total[name]
			if !ok && q.IsZero() {
				continue
			}
		}
		if !ok || have.Cmp(q) != 0 {
			return true
		}
	}
	return false
}

// applyCapacity returns copies of the type's capacity and overhead with capacity applied: for
// cpu, memory and ephemeral-storage the value is the node's whole overhead of that resource
// (kube-reserved, nothing system-reserved or held for eviction); any other resource's capacity
// is set to it (added when the type had none).
func applyCapacity(it *InstanceType, capacity corev1.ResourceList) (corev1.ResourceList, Overhead) {
	newCapacity := it.Capacity.DeepCopy()
	if newCapacity == nil {
		newCapacity = corev1.ResourceList{}
	}
	overhead := Overhead{
		KubeReserved:      it.Overhead.KubeReserved.DeepCopy(),
		SystemReserved:    it.Overhead.SystemReserved.DeepCopy(),
		EvictionThreshold: it.Overhead.EvictionThreshold.DeepCopy(),
	}
	for name, q := range capacity {
		if !slices.Contains(overheadResources, name) {
			newCapacity[name] = q
			continue
		}
		if overhead.KubeReserved == nil {
			overhead.KubeReserved = corev1.ResourceList{}
		}
		overhead.KubeReserved[name] = q
		delete(overhead.SystemReserved, name)
		delete(overhead.EvictionThreshold, name)
	}
	return newCapacity, overhead
}
