package termination

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// Reasons of the termination conditions, Karpenter's.
const (
	reasonDraining                 = "Draining"
	reasonAwaitingVolumeDetachment = "AwaitingVolumeDetachment"
	reasonInstanceTerminating      = "InstanceTerminating"
)

// setCondition records one termination step on nc's status: Drained, VolumesDetached or
// InstanceTerminating. It patches only when the condition changes, so a requeued step costs no
// write; a NodeClaim already gone is not an error.
func setCondition(ctx context.Context, c client.Client, nc *karpv1.NodeClaim, conditionType string, status metav1.ConditionStatus, reason, message string) error {
	stored := nc.DeepCopy()
	if !meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{
		Type: conditionType, Status: status, Reason: reason, Message: message, ObservedGeneration: nc.Generation,
	}) {
		return nil
	}
	if err := c.Status().Patch(ctx, nc, client.MergeFrom(stored)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("setting %s on nodeclaim %s: %w", conditionType, nc.Name, err)
	}
	return nil
}
