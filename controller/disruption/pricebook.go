package disruption

import (
	"context"
	"math"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/controller/cost"
)

// priceBook is one decision's prices: the price book every binary prices with (cost.Pricer,
// which lists each NodePool's instance types once) and Balanced's NodePool totals.
type priceBook struct {
	pricer *cost.Pricer
	totals map[string]poolTotals
}

func newPriceBook(src cloudprovider.InstanceTypeLister, c *Cluster) *priceBook {
	pools := make([]*karpv1.NodePool, 0, len(c.NodePools))
	for _, np := range c.NodePools {
		pools = append(pools, np)
	}
	return &priceBook{pricer: cost.NewPricer(src, pools), totals: map[string]poolTotals{}}
}

func (b *priceBook) instanceTypes(ctx context.Context, np *karpv1.NodePool) (cloudprovider.InstanceTypes, error) {
	return b.pricer.InstanceTypes(ctx, np)
}

// nodePrice is what the candidate's node costs per hour (cost.Pricer.Running: the offering
// its labels name, available or not); +Inf when the type or offering is unknown.
func (b *priceBook) nodePrice(ctx context.Context, cand *Candidate) (float64, error) {
	if _, err := b.pricer.InstanceTypes(ctx, cand.NodePool); err != nil {
		return 0, err
	}
	o, ok, err := b.pricer.Running(ctx, cand.NodeClaim, cand.Node)
	if err != nil || !ok {
		return math.Inf(1), err
	}
	return o.Price, nil
}
