package lifecycle

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/scheduling"
)

// offeringsFor lists the offerings nc could have launched as: for each instance type its
// requirements allow and its requests fit, each available offering compatible with them. These
// are the offerings a launch tried before answering with insufficient capacity.
func (c *Controller) offeringsFor(ctx context.Context, nc *karpv1.NodeClaim) ([]cloudprovider.OfferingKey, error) {
	pool, err := c.nodePoolFor(ctx, nc)
	if err != nil {
		return nil, err
	}
	its, err := c.cloudProvider.GetInstanceTypes(ctx, pool)
	if err != nil {
		return nil, fmt.Errorf("getting instance types: %w", err)
	}
	reqs := scheduling.FromNodeSelectorRequirementsWithMinValues(nc.Spec.Requirements...)
	var out []cloudprovider.OfferingKey
	for _, it := range its {
		if it.Requirements.Intersects(reqs) != nil || scheduling.Fits(nc.Spec.Resources.Requests, it.Allocatable()) != nil {
			continue
		}
		for _, o := range it.Offerings.Available().Compatible(reqs) {
			out = append(out, cloudprovider.OfferingKey{CapacityType: o.CapacityType(), InstanceType: it.Name, Zone: o.Zone()})
		}
	}
	return out, nil
}

// nodePoolFor is nc's NodePool, or, for a NodeClaim without one, a NodePool with its NodeClass,
// so the provider can still resolve instance types.
func (c *Controller) nodePoolFor(ctx context.Context, nc *karpv1.NodeClaim) (*karpv1.NodePool, error) {
	if name := nc.Labels[karpv1.NodePoolLabelKey]; name != "" {
		pool := &karpv1.NodePool{}
		err := c.client.Get(ctx, client.ObjectKey{Name: name}, pool)
		if err == nil {
			return pool, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("getting nodepool %s: %w", name, err)
		}
	}
	pool := &karpv1.NodePool{}
	pool.Name = nc.Labels[karpv1.NodePoolLabelKey]
	pool.Spec.Template.Spec.NodeClassRef = nc.Spec.NodeClassRef
	return pool, nil
}
