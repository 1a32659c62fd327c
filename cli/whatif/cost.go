package whatif

import (
	"context"
	"slices"
	"strings"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// PoolCost is a NodePool's cost per hour before and after a simulation.
type PoolCost struct {
	NodePool string  `json:"nodePool"`
	Before   float64 `json:"before"`
	After    float64 `json:"after"`
}

// poolCosts sums lines by NodePool, then adds the provisioning's new NodeClaims and the
// replacements of every command of the disruption pass and takes off their removed nodes.
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
		for _, cmd := range dis.Commands {
			for _, n := range cmd.Nodes {
				if n.Offering != nil {
					get(n.NodePool).After -= n.Offering.Price
				}
			}
			for _, r := range cmd.Replacements {
				if r.Launch != nil {
					get(r.NodePool).After += r.Launch.Price
				}
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
	return len(r.Provisioning.NewNodeClaims) > 0 || len(r.Disruption.Commands) > 0
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
	lines, err := c.Costs(ctx)
	if err != nil {
		return nil, err
	}
	return &Result{Provisioning: prov, Disruption: dis, Cost: poolCosts(c.Snapshot.NodePools, lines, prov, dis)}, nil
}
