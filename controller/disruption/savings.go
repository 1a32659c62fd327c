package disruption

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/controller/cost"
)

// consolidationSavings is joinery's own (Karpenter has no such metric): what `joinery cost`
// prints as the next disruption pass's savings, by NodePool.
var consolidationSavings = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Namespace: "joinery", Subsystem: "nodepool", Name: "consolidation_savings_per_hour",
	Help: "Cost per hour the command the last disruption pass chose saves in the NodePool (its candidates' offerings less its replacements'), set while the command is validated; 0 when the pass chose none. The numbers joinery cost prints as the next pass's savings.",
}, []string{"nodepool"})

func init() {
	crmetrics.Registry.MustRegister(consolidationSavings)
}

// Savings is the cost per hour cmd saves, by NodePool: each candidate's running offering
// less each replacement's expected launch offering, priced by pricer as controller/cost
// prices NodeClaims. A NodeClaim the catalog cannot price counts 0.
func (c *Command) Savings(ctx context.Context, pricer *cost.Pricer) (map[string]float64, error) {
	out := map[string]float64{}
	for _, cand := range c.Candidates {
		o, ok, err := pricer.Running(ctx, cand.NodeClaim, cand.Node)
		if err != nil {
			return nil, fmt.Errorf("pricing candidate %s: %w", cand.Name(), err)
		}
		if ok {
			out[cand.NodeClaim.Labels[karpv1.NodePoolLabelKey]] += o.Price
		}
	}
	for _, r := range c.Replacements {
		o, ok, err := pricer.Launch(ctx, r)
		if err != nil {
			return nil, fmt.Errorf("pricing a replacement: %w", err)
		}
		if ok {
			out[r.Labels[karpv1.NodePoolLabelKey]] -= o.Price
		}
	}
	return out, nil
}

// recordSavings sets the savings gauge to cmd's, 0 for every other NodePool of cluster; cmd
// nil is a pass that chose nothing. Without prices the gauge stays unset.
func (c *Controller) recordSavings(ctx context.Context, cluster *Cluster, cmd *Command) error {
	if c.opts.InstanceTypes == nil {
		return nil
	}
	byPool := map[string]float64{}
	for name := range cluster.NodePools {
		byPool[name] = 0
	}
	if cmd != nil {
		saved, err := cmd.Savings(ctx, c.pricer(cluster, cmd))
		if err != nil {
			return err
		}
		for np, v := range saved {
			byPool[np] += v
		}
	}
	consolidationSavings.Reset()
	for np, v := range byPool {
		consolidationSavings.WithLabelValues(np).Set(v)
	}
	return nil
}

// pricer is the price book cmd was decided with, so the gauge and the event show the savings
// the decision saw; a new one over the controller's catalog for a command priced by nothing.
func (c *Controller) pricer(cluster *Cluster, cmd *Command) *cost.Pricer {
	if cmd.prices != nil {
		return cmd.prices
	}
	pools := make([]*karpv1.NodePool, 0, len(cluster.NodePools))
	for _, np := range cluster.NodePools {
		pools = append(pools, np)
	}
	return cost.NewPricer(c.opts.InstanceTypes, pools)
}
