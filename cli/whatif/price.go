package whatif

import (
	"context"
	"math"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/scheduling"
)

// Offering is the offering a NodeClaim runs on, or the one it would launch with.
type Offering struct {
	InstanceType string  `json:"instanceType"`
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	Price        float64 `json:"price"`
}

// instanceTypesOf returns the catalog a NodePool sees; every recorded type for a NodeClaim
// whose NodePool is gone.
func (c *Cluster) instanceTypesOf(ctx context.Context, nodePool string) []*cloudprovider.InstanceType {
	var np *karpv1.NodePool
	for i := range c.Snapshot.NodePools {
		if c.Snapshot.NodePools[i].Name == nodePool {
			np = &c.Snapshot.NodePools[i]
		}
	}
	its, err := c.Catalog.GetInstanceTypes(ctx, np)
	if err != nil {
		its, _ = c.Catalog.GetInstanceTypes(ctx, nil)
	}
	return its
}

// LaunchedOffering is the offering a launched NodeClaim runs on: its instance type, zone and
// capacity type (and reservation) labels, priced from the catalog. ok is false when the
// NodeClaim has not launched yet (no instance-type label) or the catalog has no such offering.
func (c *Cluster) LaunchedOffering(ctx context.Context, nc *karpv1.NodeClaim, node *corev1.Node) (Offering, bool) {
	labels := map[string]string{}
	if node != nil {
		for k, v := range node.Labels {
			labels[k] = v
		}
	}
	for k, v := range nc.Labels {
		labels[k] = v
	}
	name := labels[corev1.LabelInstanceTypeStable]
	if name == "" {
		return Offering{}, false
	}
	out := Offering{InstanceType: name, Zone: labels[corev1.LabelTopologyZone], CapacityType: labels[karpv1.CapacityTypeLabelKey], Price: math.Inf(1)}
	for _, it := range c.instanceTypesOf(ctx, nc.Labels[karpv1.NodePoolLabelKey]) {
		if it.Name != name {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone() != out.Zone || o.CapacityType() != out.CapacityType {
				continue
			}
			if id := o.ReservationID(); id != "" && id != labels[cloudprovider.ReservationIDLabel] {
				continue
			}
			out.Price = math.Min(out.Price, o.Price)
		}
	}
	if math.IsInf(out.Price, 1) {
		return out, false
	}
	return out, true
}

// ExpectedOffering is the offering a NodeClaim that has not launched would launch with: of
// the available offerings of its instance types that meet its requirements, the one
// cloudprovider.Offerings.Preferred picks (reserved, then spot, then on-demand; cheapest).
func (c *Cluster) ExpectedOffering(ctx context.Context, nc *karpv1.NodeClaim) (Offering, bool) {
	reqs := scheduling.FromNodeSelectorRequirementsWithMinValues(nc.Spec.Requirements...)
	names := map[string]bool{}
	if r := reqs.Get(corev1.LabelInstanceTypeStable); r != nil {
		for _, v := range r.Values() {
			names[v] = true
		}
	}
	var offerings cloudprovider.Offerings
	byOffering := map[*cloudprovider.Offering]string{}
	for _, it := range c.instanceTypesOf(ctx, nc.Labels[karpv1.NodePoolLabelKey]) {
		if len(names) > 0 && !names[it.Name] {
			continue
		}
		if it.Requirements.Intersects(reqs) != nil {
			continue
		}
		for _, o := range it.Offerings.Available().Compatible(reqs) {
			offerings = append(offerings, o)
			byOffering[o] = it.Name
		}
	}
	best := offerings.Preferred()
	if best == nil {
		return Offering{}, false
	}
	return Offering{InstanceType: byOffering[best], Zone: best.Zone(), CapacityType: best.CapacityType(), Price: best.Price}, true
}

// NodeClaimOffering is the launched offering of nc, or the expected one while it launches.
func (c *Cluster) NodeClaimOffering(ctx context.Context, nc *karpv1.NodeClaim, node *corev1.Node) (Offering, bool) {
	if o, ok := c.LaunchedOffering(ctx, nc, node); ok {
		return o, true
	}
	return c.ExpectedOffering(ctx, nc)
}
