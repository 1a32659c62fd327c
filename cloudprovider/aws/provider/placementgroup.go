package provider

import (
	"context"
	"strconv"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// labelPartition labels a NodeClaim launched into a partition placement group with the
// partition EC2 chose. The fleet's answer does not say, so the instance is described once;
// Karpenter learns it the same way, before the node registers. A failure only leaves the label
// off: the instance runs in the group either way.
func (p *Provider) labelPartition(ctx context.Context, class *awsv1.EC2NodeClass, nodeClaim *karpv1.NodeClaim, instanceID string) {
	pg := class.PlacementGroup()
	if pg == nil || pg.Strategy != awsv1.PlacementGroupStrategyPartition {
		return
	}
	inst, err := p.instances.Get(ctx, instanceID)
	if err != nil {
		p.log.Error(err, "reading the partition of an instance in a partition placement group", "nodeclaim", nodeClaim.Name, "instance", instanceID)
		return
	}
	if inst.PartitionNumber > 0 {
		nodeClaim.Labels[awsv1.LabelPlacementGroupPartition] = strconv.Itoa(int(inst.PartitionNumber))
	}
}

// placementGroupDrifted reports whether a NodeClaim's placement group, from its
// karpenter.k8s.aws/placement-group-id label, is no longer its class's: the selector was added,
// removed or now resolves to another group. A class whose selector does not resolve at the
// moment is not ready, and says nothing.
func placementGroupDrifted(nodeClaim *karpv1.NodeClaim, class *awsv1.EC2NodeClass) bool {
	want := ""
	if pg := class.PlacementGroup(); pg != nil {
		want = pg.ID
	} else if class.Spec.PlacementGroupSelector != nil {
		return false
	}
	return nodeClaim.Labels[awsv1.LabelPlacementGroupID] != want
}
