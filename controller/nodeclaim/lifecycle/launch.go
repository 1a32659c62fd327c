package lifecycle

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/simulation"
)

// launch creates the NodeClaim's instance unless its status already names one, and copies what
// was launched onto the NodeClaim: labels and annotations into metadata, provider ID, image,
// capacity and allocatable into status.
func (c *Controller) launch(ctx context.Context, nc *karpv1.NodeClaim, conds conditionSetter) (stepResult, error) {
	if nc.Status.ProviderID != "" {
		conds.set(karpv1.ConditionTypeLaunched, metav1.ConditionTrue, karpv1.ConditionTypeLaunched, "")
		return stepResult{}, nil
	}
	toLaunch := c.launchSpec(ctx, nc)
	launched, err := c.cloudProvider.Create(ctx, toLaunch)
	if err != nil {
		if cloudprovider.IsInsufficientCapacityError(err) {
			return stepResult{deleted: true}, c.handleInsufficientCapacity(ctx, toLaunch, err)
		}
		reason, message := launchFailure(err)
		conds.set(karpv1.ConditionTypeLaunched, metav1.ConditionFalse, reason, message)
		c.recorder.Eventf(nc, nil, corev1.EventTypeWarning, reason, "Launch", "Failed to launch: %s", message)
		if c.registrationExpired(nc) {
			// It never launched within the liveness TTL: its pods need capacity from elsewhere.
			return c.awaitRegistration(ctx, nc, "launch failed: "+message)
		}
		return stepResult{stop: true}, fmt.Errorf("launching nodeclaim %s: %w", nc.Name, err)
	}
	if nc.Labels == nil {
		nc.Labels = map[string]string{}
	}
	maps.Copy(nc.Labels, launched.Labels)
	if len(launched.Annotations) > 0 {
		if nc.Annotations == nil {
			nc.Annotations = map[string]string{}
		}
		maps.Copy(nc.Annotations, launched.Annotations)
	}
	nc.Status.ProviderID = launched.Status.ProviderID
	nc.Status.ImageID = launched.Status.ImageID
	nc.Status.Capacity = launched.Status.Capacity.DeepCopy()
	nc.Status.Allocatable = launched.Status.Allocatable.DeepCopy()
	conds.set(karpv1.ConditionTypeLaunched, metav1.ConditionTrue, karpv1.ConditionTypeLaunched, "")
	log.FromContext(ctx).Info("launched nodeclaim",
		"provider-id", nc.Status.ProviderID,
		"instance-type", nc.Labels[corev1.LabelInstanceTypeStable],
		"zone", nc.Labels[corev1.LabelTopologyZone],
		"capacity-type", nc.Labels[karpv1.CapacityTypeLabelKey],
		"allocatable", nc.Status.Allocatable)
	return stepResult{}, nil
}

// launchSpec is nc as the provider is to launch it: requesting what every pod planned onto it
// needs. Its spec is immutable and counts only the pods it was created for; the scheduler
// records the requests of the pods it planned onto it while it launched in an annotation
// (simulation.PlannedRequestsAnnotationKey), and the provider picks an instance type whose
// allocatable holds them, as it does for the spec's. A corrupt annotation is reported and
// the spec's requests launched: the pods that do not fit are then planned again.
func (c *Controller) launchSpec(ctx context.Context, nc *karpv1.NodeClaim) *karpv1.NodeClaim {
	requests, err := simulation.LaunchRequests(nc)
	if err != nil {
		log.FromContext(ctx).Error(err, "launching with the nodeclaim's own requests")
		c.recorder.Eventf(nc, nil, corev1.EventTypeWarning, reasonPlannedRequestsInvalid, "Launch", "Ignoring the planned requests: %s", err.Error())
	}
	if equality.Semantic.DeepEqual(requests, nc.Spec.Resources.Requests) {
		return nc
	}
	out := nc.DeepCopy()
	out.Spec.Resources.Requests = requests
	log.FromContext(ctx).V(1).Info("launching for the pods planned onto the nodeclaim since its creation", "requests", requests, "spec-requests", nc.Spec.Resources.Requests)
	return out
}

// launchFailure is the Launched condition's reason and message for a failed Create.
func launchFailure(err error) (reason, message string) {
	if createErr, ok := cloudprovider.AsCreateError(err); ok && createErr.ConditionReason != "" {
		return createErr.ConditionReason, createErr.ConditionMessage
	}
	if cloudprovider.IsNodeClassNotReadyError(err) {
		return reasonNodeClassNotReady, err.Error()
	}
	return reasonLaunchFailed, err.Error()
}

// handleInsufficientCapacity marks the offerings the cloud refused as unavailable (or, when the
// provider cannot say which, every offering the NodeClaim could have launched as), so the
// scheduler plugin plans its pods elsewhere, and deletes the NodeClaim.
func (c *Controller) handleInsufficientCapacity(ctx context.Context, nc *karpv1.NodeClaim, launchErr error) error {
	offerings := cloudprovider.RefusedOfferings(launchErr)
	if len(offerings) == 0 {
		var err error
		if offerings, err = c.offeringsFor(ctx, nc); err != nil {
			return fmt.Errorf("listing offerings of nodeclaim %s after insufficient capacity: %w", nc.Name, err)
		}
	}
	if err := c.unavailable.MarkUnavailable(ctx, cloudprovider.UnavailableOfferingsTTL, offerings...); err != nil {
		return fmt.Errorf("recording unavailable offerings of nodeclaim %s: %w", nc.Name, err)
	}
	log.FromContext(ctx).Info("deleting nodeclaim: insufficient capacity", "error", launchErr.Error(), "unavailable-offerings", len(offerings))
	c.recorder.Eventf(nc, nil, corev1.EventTypeWarning, reasonInsufficientCap, "Launch",
		"NodeClaim %s event: %s; marked %d offerings unavailable for %s", nc.Name, launchErr.Error(), len(offerings), cloudprovider.UnavailableOfferingsTTL)
	return c.deleteNodeClaim(ctx, nc)
}
