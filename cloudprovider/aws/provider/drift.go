package provider

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/sets"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/aws/instance"
)

// Drift reasons, Karpenter's names.
const (
	DriftAMI                 cloudprovider.DriftReason = "AMIDrift"
	DriftSubnet              cloudprovider.DriftReason = "SubnetDrift"
	DriftSecurityGroup       cloudprovider.DriftReason = "SecurityGroupDrift"
	DriftCapacityReservation cloudprovider.DriftReason = "CapacityReservationDrift"
	DriftNodeClass           cloudprovider.DriftReason = "NodeClassDrift"
	DriftPlacementGroup      cloudprovider.DriftReason = "PlacementGroupDrift"
)

// IsDrifted compares nodeClaim's instance with what its EC2NodeClass resolves to now: its
// image among the class's AMIs, its subnet among the subnets, its security groups the
// selected ones, its capacity reservation still selected, and the class's static hash
// unchanged. A class not resolved yet (empty status) says nothing about drift.
func (p *Provider) IsDrifted(ctx context.Context, nodeClaim *karpv1.NodeClaim) (cloudprovider.DriftReason, error) {
	class, err := p.nodeClass(ctx, nodeClaim.Spec.NodeClassRef)
	if err != nil {
		if cloudprovider.IsNodeClassNotReadyError(err) {
			return "", nil
		}
		return "", err
	}
	_, id, err := instance.ParseProviderID(nodeClaim.Status.ProviderID)
	if err != nil {
		return "", nil
	}
	inst, err := p.instances.Get(ctx, id)
	if err != nil {
		if errors.Is(err, instance.ErrNotFound) {
			return "", cloudprovider.NewNodeClaimNotFoundError(err)
		}
		return "", fmt.Errorf("checking drift of nodeclaim %s: %w", nodeClaim.Name, err)
	}
	return drift(nodeClaim, class, inst), nil
}

func drift(nodeClaim *karpv1.NodeClaim, class *awsv1.EC2NodeClass, inst instance.Instance) cloudprovider.DriftReason {
	st := class.Status
	if len(st.AMIs) > 0 && !slices.ContainsFunc(st.AMIs, func(a awsv1.AMI) bool { return a.ID == inst.ImageID }) {
		return DriftAMI
	}
	if len(st.Subnets) > 0 && !slices.ContainsFunc(st.Subnets, func(s awsv1.Subnet) bool { return s.ID == inst.SubnetID }) {
		return DriftSubnet
	}
	if len(st.SecurityGroups) > 0 {
		want := sets.New[string]()
		for _, sg := range st.SecurityGroups {
			want.Insert(sg.ID)
		}
		if !want.Equal(sets.New(inst.SecurityGroupIDs...)) {
			return DriftSecurityGroup
		}
	}
	if reservation := nodeClaim.Labels[awsv1.LabelCapacityReservationID]; reservation != "" &&
		!slices.ContainsFunc(st.CapacityReservations, func(c awsv1.CapacityReservation) bool { return c.ID == reservation }) {
		return DriftCapacityReservation
	}
	if placementGroupDrifted(nodeClaim, class) {
		return DriftPlacementGroup
	}
	ncHash, classHash := nodeClaim.Annotations[awsv1.AnnotationEC2NodeClassHash], class.Annotations[awsv1.AnnotationEC2NodeClassHash]
	sameVersion := nodeClaim.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] == class.Annotations[awsv1.AnnotationEC2NodeClassHashVersion]
	// Hashes of another version were computed differently and say nothing.
	if ncHash != "" && classHash != "" && sameVersion && ncHash != classHash {
		return DriftNodeClass
	}
	return ""
}
