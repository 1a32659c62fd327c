package provider

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/aws/instance"
)

// Delete terminates nodeClaim's instance. It returns a NodeClaimNotFoundError once the instance
// is gone (unknown, or terminated), and nil while it is still shutting down.
func (p *Provider) Delete(ctx context.Context, nodeClaim *karpv1.NodeClaim) error {
	_, id, err := instance.ParseProviderID(nodeClaim.Status.ProviderID)
	if err != nil {
		return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("nodeclaim %s: %w", nodeClaim.Name, err))
	}
	if err := p.instances.Terminate(ctx, id); err != nil {
		if errors.Is(err, instance.ErrNotFound) {
			return cloudprovider.NewNodeClaimNotFoundError(err)
		}
		return fmt.Errorf("deleting nodeclaim %s: %w", nodeClaim.Name, err)
	}
	return nil
}

// Get describes the instance with providerID; a NodeClaimNotFoundError when it does not exist
// or has terminated.
func (p *Provider) Get(ctx context.Context, providerID string) (*karpv1.NodeClaim, error) {
	_, id, err := instance.ParseProviderID(providerID)
	if err != nil {
		return nil, cloudprovider.NewNodeClaimNotFoundError(err)
	}
	inst, err := p.instances.Get(ctx, id)
	if err != nil {
		if errors.Is(err, instance.ErrNotFound) {
			return nil, cloudprovider.NewNodeClaimNotFoundError(err)
		}
		return nil, err
	}
	return nodeClaimFor(inst), nil
}

// List describes every live instance joinery launched in the cluster.
func (p *Provider) List(ctx context.Context) ([]*karpv1.NodeClaim, error) {
	insts, err := p.instances.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*karpv1.NodeClaim, 0, len(insts))
	for _, inst := range insts {
		out = append(out, nodeClaimFor(inst))
	}
	return out, nil
}

// nodeClaimFor describes an instance as a NodeClaim: its name and NodePool from its tags, the
// labels EC2 knows, and its launch time as creation time (garbage collection's grace period).
func nodeClaimFor(inst instance.Instance) *karpv1.NodeClaim {
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:              inst.Tags[awsv1.TagNodeClaim],
			CreationTimestamp: metav1.NewTime(inst.LaunchTime),
			Labels: map[string]string{
				corev1.LabelInstanceTypeStable: inst.InstanceType,
				corev1.LabelTopologyZone:       inst.Zone,
				karpv1.CapacityTypeLabelKey:    inst.CapacityType,
			},
		},
		Status: karpv1.NodeClaimStatus{ProviderID: inst.ProviderID(), ImageID: inst.ImageID},
	}
	if pool, ok := inst.Tags[awsv1.TagNodePool]; ok {
		nc.Labels[karpv1.NodePoolLabelKey] = pool
	}
	if inst.CapacityReservationID != "" {
		nc.Labels[awsv1.LabelCapacityReservationID] = inst.CapacityReservationID
	}
	return nc
}
