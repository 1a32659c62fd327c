// Package cost prices the cluster's NodeClaims per NodePool, capacity type and zone, with
// the utilisation of their nodes: joinery-controller exports it as metrics, and the joinery
// CLI's cost command prints the same numbers.
package cost

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/scheduling"
)

// Line is the cost of a NodePool's NodeClaims of one capacity type in one zone.
type Line struct {
	NodePool     string  `json:"nodePool"`
	CapacityType string  `json:"capacityType"`
	Zone         string  `json:"zone"`
	NodeClaims   int     `json:"nodeClaims"`
	PerHour      float64 `json:"perHour"`
	// CPU and Memory are the requests of the pods bound to these NodeClaims' nodes over the
	// nodes' allocatable (0..1); NodeClaims without a node count in neither.
	CPU    float64 `json:"cpuUtilisation"`
	Memory float64 `json:"memoryUtilisation"`
	// Unpriced counts NodeClaims whose offering the catalog does not know.
	Unpriced int `json:"unpriced,omitempty"`
}

// Offering is the offering a NodeClaim runs on, or would launch with.
type Offering struct {
	InstanceType string  `json:"instanceType"`
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	Price        float64 `json:"price"`
}

// State is what Compute reads.
type State struct {
	NodePools  []*karpv1.NodePool
	NodeClaims []*karpv1.NodeClaim
	Nodes      []*corev1.Node
	Pods       []*corev1.Pod
}

// Pricer is joinery's one price book: what a running NodeClaim costs (the offering its labels
// name) and what a launching one will cost (the offering the launch order picks), from the
// cloud provider's catalog, listed once per NodePool and kept for the Pricer's life (one
// decision, one export). Consolidation, Balanced, the savings gauge, the cost metrics and the
// CLI all price with it.
type Pricer struct {
	source cloudprovider.InstanceTypeLister
	pools  map[string]*karpv1.NodePool
	cache  map[string]cloudprovider.InstanceTypes
}

// NewPricer prices with source; nodePools are the NodePools NodeClaims name.
func NewPricer(source cloudprovider.InstanceTypeLister, nodePools []*karpv1.NodePool) *Pricer {
	p := &Pricer{source: source, pools: map[string]*karpv1.NodePool{}, cache: map[string]cloudprovider.InstanceTypes{}}
	for _, np := range nodePools {
		p.pools[np.Name] = np
	}
	return p
}

// InstanceTypes are np's types, listed once.
func (p *Pricer) InstanceTypes(ctx context.Context, np *karpv1.NodePool) (cloudprovider.InstanceTypes, error) {
	if _, ok := p.pools[np.Name]; !ok {
		p.pools[np.Name] = np
	}
	return p.instanceTypes(ctx, np.Name)
}

// instanceTypes are the NodePool's types; every type for a NodeClaim whose NodePool is gone.
func (p *Pricer) instanceTypes(ctx context.Context, nodePool string) (cloudprovider.InstanceTypes, error) {
	if its, ok := p.cache[nodePool]; ok {
		return its, nil
	}
	if p.source == nil {
		return nil, fmt.Errorf("no instance type source to price nodepool %s", nodePool)
	}
	its, err := p.source.GetInstanceTypes(ctx, p.pools[nodePool]) // nil: the whole catalog
	if err != nil {
		return nil, fmt.Errorf("listing the instance types of nodepool %s: %w", nodePool, err)
	}
	p.cache[nodePool] = its
	return its, nil
}

// Running is the offering nc runs on, from its labels (and its node's), priced.
func (p *Pricer) Running(ctx context.Context, nc *karpv1.NodeClaim, node *corev1.Node) (Offering, bool, error) {
	labels := map[string]string{}
	if node != nil {
		for k, v := range node.Labels {
			labels[k] = v
		}
	}
	for k, v := range nc.Labels {
		labels[k] = v
	}
	its, err := p.instanceTypes(ctx, nc.Labels[karpv1.NodePoolLabelKey])
	if err != nil {
		return Offering{}, false, err
	}
	it, o := its.RunningOffering(labels)
	if o == nil {
		return Offering{}, false, nil
	}
	return Offering{InstanceType: it.Name, Zone: o.Zone(), CapacityType: o.CapacityType(), Price: o.Price}, true, nil
}

// Launch is the offering a NodeClaim that has not launched would most likely launch with: the
// first the providers' launch order picks (cloudprovider.InstanceTypes.Launches).
func (p *Pricer) Launch(ctx context.Context, nc *karpv1.NodeClaim) (Offering, bool, error) {
	its, err := p.instanceTypes(ctx, nc.Labels[karpv1.NodePoolLabelKey])
	if err != nil {
		return Offering{}, false, err
	}
	it, o := its.LaunchOffering(scheduling.FromNodeSelectorRequirementsWithMinValues(nc.Spec.Requirements...), nc.Spec.Resources.Requests)
	if o == nil {
		return Offering{}, false, nil
	}
	return Offering{InstanceType: it.Name, Zone: o.Zone(), CapacityType: o.CapacityType(), Price: o.Price}, true, nil
}

// Counts reports whether nc counts in its NodePool's cost: every NodeClaim that is not being
// deleted, launched or launching. A NodePool's cost is the sum of Of over the NodeClaims that
// count: the one definition joinery_nodepool_cost_per_hour, karpenter_nodepools_cost_total,
// `joinery cost` and Balanced consolidation's NodePool cost share.
func Counts(nc *karpv1.NodeClaim) bool { return nc.DeletionTimestamp == nil }

// Of is the offering nc runs on, or, while it launches, the one it would launch with.
func (p *Pricer) Of(ctx context.Context, nc *karpv1.NodeClaim, node *corev1.Node) (Offering, bool, error) {
	if o, ok, err := p.Running(ctx, nc, node); ok || err != nil {
		return o, ok, err
	}
	return p.Launch(ctx, nc)
}

// Compute prices every NodeClaim that is not being deleted, by NodePool, capacity type and
// zone, sorted.
func Compute(ctx context.Context, pricer *Pricer, s State) ([]Line, error) {
	nodes := scheduling.IndexNodes(s.Nodes)
	requests := map[string]corev1.ResourceList{}
	for _, p := range s.Pods {
		if p.Spec.NodeName == "" || scheduling.PodFinished(p) {
			continue
		}
		requests[p.Spec.NodeName] = scheduling.Merge(requests[p.Spec.NodeName], scheduling.PodRequests(p))
	}
	type sums struct {
		line                               Line
		cpuReq, cpuAlloc, memReq, memAlloc resource.Quantity
	}
	lines := map[[3]string]*sums{}
	for _, nc := range s.NodeClaims {
		if !Counts(nc) {
			continue
		}
		node := nodes.NodeOf(nc)
		o, ok, err := pricer.Of(ctx, nc, node)
		if err != nil {
			return nil, err
		}
		key := [3]string{nc.Labels[karpv1.NodePoolLabelKey], o.CapacityType, o.Zone}
		l := lines[key]
		if l == nil {
			l = &sums{line: Line{NodePool: key[0], CapacityType: key[1], Zone: key[2]}}
			lines[key] = l
		}
		l.line.NodeClaims++
		if ok {
			l.line.PerHour += o.Price
		} else {
			l.line.Unpriced++
		}
		if node != nil {
			req := requests[node.Name]
			l.cpuReq.Add(req[corev1.ResourceCPU])
			l.memReq.Add(req[corev1.ResourceMemory])
			l.cpuAlloc.Add(node.Status.Allocatable[corev1.ResourceCPU])
			l.memAlloc.Add(node.Status.Allocatable[corev1.ResourceMemory])
		}
	}
	out := make([]Line, 0, len(lines))
	for _, l := range lines {
		l.line.CPU = ratio(l.cpuReq, l.cpuAlloc)
		l.line.Memory = ratio(l.memReq, l.memAlloc)
		out = append(out, l.line)
	}
	slices.SortFunc(out, func(a, b Line) int {
		return strings.Compare(a.NodePool+"\x00"+a.CapacityType+"\x00"+a.Zone, b.NodePool+"\x00"+b.CapacityType+"\x00"+b.Zone)
	})
	return out, nil
}

// PerNodePool sums lines' cost per hour by NodePool: every one of nodePools (0 without
// NodeClaims), and a deleted NodePool whose NodeClaims still run. NodeClaims without a
// NodePool are left out.
func PerNodePool(nodePools []*karpv1.NodePool, lines []Line) map[string]float64 {
	out := make(map[string]float64, len(nodePools))
	for _, np := range nodePools {
		out[np.Name] = 0
	}
	for _, l := range lines {
		if l.NodePool != "" {
			out[l.NodePool] += l.PerHour
		}
	}
	return out
}

func ratio(a, b resource.Quantity) float64 {
	if b.IsZero() {
		return 0
	}
	return float64(a.MilliValue()) / float64(b.MilliValue())
}
