package whatif

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/controller/cost"
)

// Offering is the offering a NodeClaim runs on, or the one it would launch with.
type Offering = cost.Offering

// CostLine is the cost of a NodePool's NodeClaims of one capacity type in one zone.
type CostLine = cost.Line

// pricer prices from the snapshot's catalog, as joinery-controller's cost metrics do from
// the cloud provider's.
func (c *Cluster) pricer() *cost.Pricer {
	return cost.NewPricer(c.Catalog, c.nodePools())
}

func (c *Cluster) nodePools() []*karpv1.NodePool {
	out := make([]*karpv1.NodePool, len(c.Snapshot.NodePools))
	for i := range c.Snapshot.NodePools {
		out[i] = &c.Snapshot.NodePools[i]
	}
	return out
}

// LaunchedOffering is the offering a launched NodeClaim runs on, priced from the catalog; ok
// is false while it launches or when the catalog has no such offering.
func (c *Cluster) LaunchedOffering(ctx context.Context, nc *karpv1.NodeClaim, node *corev1.Node) (Offering, bool, error) {
	return c.pricer().Running(ctx, nc, node)
}

// ExpectedOffering is the offering a NodeClaim that has not launched would most likely
// launch with.
func (c *Cluster) ExpectedOffering(ctx context.Context, nc *karpv1.NodeClaim) (Offering, bool, error) {
	return c.pricer().Launch(ctx, nc)
}

// Costs prices every NodeClaim that is not being deleted, by NodePool, capacity type and
// zone (cost.Compute, the numbers joinery-controller exports as metrics).
func (c *Cluster) Costs(ctx context.Context) ([]CostLine, error) {
	s := cost.State{NodePools: c.nodePools()}
	for i := range c.Snapshot.NodeClaims {
		s.NodeClaims = append(s.NodeClaims, &c.Snapshot.NodeClaims[i])
	}
	for i := range c.Snapshot.Nodes {
		s.Nodes = append(s.Nodes, &c.Snapshot.Nodes[i])
	}
	for i := range c.Snapshot.Pods {
		s.Pods = append(s.Pods, &c.Snapshot.Pods[i])
	}
	return cost.Compute(ctx, c.pricer(), s)
}
