package whatif

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/scheduling"
)

// CostLine is the cost of a NodePool's nodes of one capacity type in one zone.
type CostLine struct {
	NodePool     string  `json:"nodePool"`
	CapacityType string  `json:"capacityType"`
	Zone         string  `json:"zone"`
	NodeClaims   int     `json:"nodeClaims"`
	PerHour      float64 `json:"perHour"`
	// CPU and Memory utilisation: the requests of the pods bound to these nodes over their
	// allocatable (0..1); NodeClaims still launching count neither.
	CPU    float64 `json:"cpuUtilisation"`
	Memory float64 `json:"memoryUtilisation"`
	// Unpriced counts NodeClaims whose offering the catalog does not know.
	Unpriced int `json:"unpriced,omitempty"`

	cpuReq, cpuAlloc, memReq, memAlloc resource.Quantity
}

// Costs prices every NodeClaim that is not being deleted, by NodePool, capacity type and
// zone: launched ones at their offering's price, launching ones at the offering they would
// most likely launch with.
func (c *Cluster) Costs(ctx context.Context) []CostLine {
	nodes := map[string]*corev1.Node{}
	for i := range c.Snapshot.Nodes {
		nodes[c.Snapshot.Nodes[i].Name] = &c.Snapshot.Nodes[i]
	}
	byProviderID := map[string]*corev1.Node{}
	for _, n := range nodes {
		if n.Spec.ProviderID != "" {
			byProviderID[n.Spec.ProviderID] = n
		}
	}
	requests := map[string]corev1.ResourceList{}
	for i := range c.Snapshot.Pods {
		p := &c.Snapshot.Pods[i]
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		requests[p.Spec.NodeName] = scheduling.Merge(requests[p.Spec.NodeName], scheduling.PodRequests(p))
	}
	lines := map[[3]string]*CostLine{}
	for i := range c.Snapshot.NodeClaims {
		nc := &c.Snapshot.NodeClaims[i]
		if nc.DeletionTimestamp != nil {
			continue
		}
		node := nodes[nc.Status.NodeName]
		if node == nil && nc.Status.ProviderID != "" {
			node = byProviderID[nc.Status.ProviderID]
		}
		o, ok := c.NodeClaimOffering(ctx, nc, node)
		key := [3]string{nc.Labels[karpv1.NodePoolLabelKey], o.CapacityType, o.Zone}
		line := lines[key]
		if line == nil {
			line = &CostLine{NodePool: key[0], CapacityType: key[1], Zone: key[2]}
			lines[key] = line
		}
		line.NodeClaims++
		if ok {
			line.PerHour += o.Price
		} else {
			line.Unpriced++
		}
		if node != nil {
			req := requests[node.Name]
			line.cpuReq.Add(req[corev1.ResourceCPU])
			line.memReq.Add(req[corev1.ResourceMemory])
			line.cpuAlloc.Add(node.Status.Allocatable[corev1.ResourceCPU])
			line.memAlloc.Add(node.Status.Allocatable[corev1.ResourceMemory])
		}
	}
	out := make([]CostLine, 0, len(lines))
	for _, l := range lines {
		l.CPU = ratio(l.cpuReq, l.cpuAlloc)
		l.Memory = ratio(l.memReq, l.memAlloc)
		out = append(out, *l)
	}
	slices.SortFunc(out, func(a, b CostLine) int {
		return strings.Compare(a.NodePool+"\x00"+a.CapacityType+"\x00"+a.Zone, b.NodePool+"\x00"+b.CapacityType+"\x00"+b.Zone)
	})
	return out
}

func ratio(a, b resource.Quantity) float64 {
	if b.IsZero() {
		return 0
	}
	return float64(a.MilliValue()) / float64(b.MilliValue())
}

// PoolCost is a NodePool's cost per hour before and after a simulation.
type PoolCost struct {
	NodePool string  `json:"nodePool"`
	Before   float64 `json:"before"`
	After    float64 `json:"after"`
}

// poolCosts sums lines by NodePool, then adds the provisioning's new NodeClaims and the
// disruption's replacements and takes off its removed nodes.
func poolCosts(nodePools []karpv1.NodePool, lines []CostLine, prov *Provisioning, dis *Disruption) []PoolCost {
	by := map[string]*PoolCost{}
	get := func(np string) *PoolCost {
		if by[np] == nil {
			by[np] = &PoolCost{NodePool: np}
		}
		return by[np]
	}
	for i := range nodePools {
		get(nodePools[i].Name)
	}
	for _, l := range lines {
		pc := get(l.NodePool)
		pc.Before += l.PerHour
		pc.After += l.PerHour
	}
	if prov != nil {
		for _, nc := range prov.NewNodeClaims {
			if nc.Launch != nil {
				get(nc.NodePool).After += nc.Launch.Price
			}
		}
	}
	if dis != nil {
		for _, n := range dis.Nodes {
			if n.Offering != nil {
				get(n.NodePool).After -= n.Offering.Price
			}
		}
		for _, r := range dis.Replacements {
			if r.Launch != nil {
				get(r.NodePool).After += r.Launch.Price
			}
		}
	}
	out := make([]PoolCost, 0, len(by))
	for _, pc := range by {
		out = append(out, *pc)
	}
	slices.SortFunc(out, func(a, b PoolCost) int { return strings.Compare(a.NodePool, b.NodePool) })
	return out
}

// Result is `joinery simulate`'s answer.
type Result struct {
	Provisioning *Provisioning `json:"provisioning"`
	Disruption   *Disruption   `json:"disruption"`
	Cost         []PoolCost    `json:"cost"`
}

// Changed reports whether the cluster would change: NodeClaims created or nodes disrupted.
func (r *Result) Changed() bool {
	return len(r.Provisioning.NewNodeClaims) > 0 || r.Disruption.Method != ""
}

// Simulate runs provisioning for the pending pods and one disruption pass.
func (c *Cluster) Simulate(ctx context.Context, opts Options) (*Result, error) {
	prov, err := c.Provision(ctx, opts)
	if err != nil {
		return nil, err
	}
	dis, err := c.Disrupt(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &Result{Provisioning: prov, Disruption: dis, Cost: poolCosts(c.Snapshot.NodePools, c.Costs(ctx), prov, dis)}, nil
}
