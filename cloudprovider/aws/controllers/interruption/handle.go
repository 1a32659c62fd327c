package interruption

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/aws/instance"
	awsinterruption "github.com/joinery-dev/joinery/cloudprovider/aws/interruption"
)

// Event reasons, Karpenter's.
const (
	ReasonSpotInterrupted           = "SpotInterrupted"
	ReasonRebalanceRecommendation   = "RebalanceRecommendation"
	ReasonInstanceUnhealthy         = "InstanceUnhealthy"
	ReasonInstanceStopping          = "InstanceStopping"
	ReasonInstanceTerminating       = "InstanceTerminating"
	ReasonTerminatingOnInterruption = "TerminatingOnInterruption"
	// ReasonCapacityReservationInterrupted is Karpenter's CapacityReservationInstanceInterrupted.
	ReasonCapacityReservationInterrupted = "CapacityReservationInstanceInterrupted"
)

// eventAction is the action of the events this controller records.
const eventAction = "Interrupt"

// response is what a kind of message makes the controller do to the instance's NodeClaim.
type response struct {
	eventType string
	reason    string
	note      string
	// terminate deletes the NodeClaim, so it is tainted, drained and its instance terminated.
	terminate bool
	// markUnavailable records the instance's offering as unavailable before the NodeClaim goes,
	// so its replacement is not planned into the same capacity pool.
	markUnavailable bool
	// forceful terminates without a graceful drain: the NodeClaim's termination deadline is set
	// to now, as for a node repair, because the instance is already broken.
	forceful bool
}

var responses = map[awsinterruption.Kind]response{
	awsinterruption.SpotInterruption: {
		eventType: corev1.EventTypeWarning, reason: ReasonSpotInterrupted,
		note: "Spot interruption warning was triggered", terminate: true, markUnavailable: true,
	},
	awsinterruption.RebalanceRecommendation: {
		eventType: corev1.EventTypeNormal, reason: ReasonRebalanceRecommendation,
		note: "Rebalance recommendation was triggered",
	},
	awsinterruption.ScheduledChange: {
		eventType: corev1.EventTypeWarning, reason: ReasonInstanceUnhealthy,
		note: "A scheduled change (AWS Health event) was announced for the instance", terminate: true,
	},
	awsinterruption.InstanceStopped: {
		eventType: corev1.EventTypeWarning, reason: ReasonInstanceStopping,
		note: "Instance is stopping", terminate: true,
	},
	awsinterruption.InstanceTerminated: {
		eventType: corev1.EventTypeWarning, reason: ReasonInstanceTerminating,
		note: "Instance is terminating", terminate: true,
	},
	// The reservation's instance goes; its reserved offering is marked so that the replacement
	// is planned elsewhere (Karpenter marks the reservation unavailable).
	awsinterruption.CapacityReservationInterrupted: {
		eventType: corev1.EventTypeWarning, reason: ReasonCapacityReservationInterrupted,
		note: "Capacity reservation interruption warning was triggered", terminate: true, markUnavailable: true,
	},
	awsinterruption.InstanceStatus: {
		eventType: corev1.EventTypeWarning, reason: ReasonInstanceUnhealthy,
		note: "The instance's instance status check failed", terminate: true, forceful: true,
	},
	awsinterruption.SystemStatus: {
		eventType: corev1.EventTypeWarning, reason: ReasonInstanceUnhealthy,
		note: "The instance's system status check failed", terminate: true, forceful: true,
	},
	awsinterruption.EventStatus: {
		eventType: corev1.EventTypeWarning, reason: ReasonInstanceUnhealthy,
		note: "A scheduled event was announced for the instance", terminate: true,
	},
}

// handleBatch handles each message and deletes those handled. A message whose handling failed
// stays on the queue and is received again after the visibility timeout.
func (c *Controller) handleBatch(ctx context.Context, queueURL string, messages []received) {
	logger := log.FromContext(ctx)
	var cluster *clusterIndex
	for _, r := range messages {
		logger := logger.WithValues("messageID", aws.ToString(r.sqs.MessageId), "kind", r.parsed.Kind, "instances", r.parsed.InstanceIDs)
		if _, ok := responses[r.parsed.Kind]; ok && cluster == nil {
			var err error
			if cluster, err = c.indexCluster(ctx); err != nil {
				logger.Error(err, "cannot handle interruption messages now; they will be received again")
				return
			}
		}
		if err := c.handle(log.IntoContext(ctx, logger), r.parsed, cluster); err != nil {
			logger.Error(err, "handling an interruption message failed; it will be received again")
			continue
		}
		if err := c.deleteMessage(ctx, queueURL, r); err != nil {
			logger.Error(err, "deleting a handled interruption message")
		}
	}
}

// handle acts on every NodeClaim the message concerns; instances without a NodeClaim are not
// this cluster's, or already gone.
func (c *Controller) handle(ctx context.Context, msg awsinterruption.Message, cluster *clusterIndex) error {
	logger := log.FromContext(ctx)
	resp, ok := responses[msg.Kind]
	if !ok {
		logger.V(1).Info("interruption message needs no action", "detailType", msg.DetailType, "state", msg.State)
		return nil
	}
	var errs []error
	for _, id := range msg.InstanceIDs {
		claim, ok := cluster.claims[id]
		if !ok {
			logger.V(1).Info("no nodeclaim for the instance; ignoring", "instance", id)
			continue
		}
		if err := c.respond(ctx, resp, msg, claim, cluster.nodes[id]); err != nil {
			errs = append(errs, fmt.Errorf("instance %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

func (c *Controller) respond(ctx context.Context, resp response, msg awsinterruption.Message, claim *karpv1.NodeClaim, node *corev1.Node) error {
	logger := log.FromContext(ctx).WithValues("nodeclaim", claim.Name)
	note := resp.note
	if msg.EventTypeCode != "" {
		note += " (" + msg.EventTypeCode + ")"
	}
	c.event(claim, node, resp.eventType, resp.reason, note)
	if resp.markUnavailable {
		if offering, ok := offeringOf(claim); ok {
			// A failure here must not hold up the drain: the instance goes in two minutes either way.
			if err := c.unavailable.MarkUnavailable(ctx, c.opts.UnavailableTTL, offering); err != nil {
				logger.Error(err, "marking the interrupted offering unavailable", "offering", offering.String())
			} else {
				logger.Info("marked the interrupted offering unavailable", "offering", offering.String(), "ttl", c.opts.UnavailableTTL)
			}
		}
	}
	if !resp.terminate || !claim.DeletionTimestamp.IsZero() {
		return nil
	}
	var replacements []string
	if c.opts.Preplanner != nil {
		// Capacity for the node's pods starts now, after the offering is marked so the
		// replacement avoids it. Forceful: a failed pre-plan does not hold the deletion back.
		var err error
		if replacements, err = c.opts.Preplanner.Preplan(ctx, PreplanMethod, claim); err != nil {
			logger.Error(err, "pre-planning capacity for an interrupted nodeclaim's pods")
		}
	}
	if resp.forceful {
		if err := c.terminateNow(ctx, claim); err != nil {
			return err
		}
	}
	err := c.kube.Delete(ctx, claim)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting nodeclaim %s: %w", claim.Name, err)
	}
	// Later messages of the batch see it going and do not delete it again.
	claim.DeletionTimestamp = &metav1.Time{Time: c.opts.Clock.Now()}
	logger.Info("deleting the nodeclaim of an interrupted instance", "reason", resp.reason, "node", claim.Status.NodeName, "replacements", replacements)
	c.recorder.Eventf(claim, nil, corev1.EventTypeWarning, ReasonTerminatingOnInterruption, eventAction, "Interruption triggered termination for the NodeClaim")
	if node != nil {
		c.recorder.Eventf(node, nil, corev1.EventTypeWarning, ReasonTerminatingOnInterruption, eventAction, "Interruption triggered termination for the Node")
	}
	return nil
}

// event records the interruption on the NodeClaim and, when it has registered, its Node.
func (c *Controller) event(claim *karpv1.NodeClaim, node *corev1.Node, eventType, reason, note string) {
	objects := []runtime.Object{claim}
	if node != nil {
		objects = append(objects, node)
	}
	for _, obj := range objects {
		c.recorder.Eventf(obj, nil, eventType, reason, eventAction, "%s", note)
	}
}

// offeringOf is the offering an interrupted NodeClaim ran on, from its labels (the zone also
// from its provider ID, which every launched NodeClaim has). A spot warning only comes for spot
// instances, so spot is assumed when the label is missing.
func offeringOf(claim *karpv1.NodeClaim) (cloudprovider.OfferingKey, bool) {
	zone := claim.Labels[corev1.LabelTopologyZone]
	if zone == "" {
		zone, _, _ = instance.ParseProviderID(claim.Status.ProviderID)
	}
	capacityType := claim.Labels[karpv1.CapacityTypeLabelKey]
	if capacityType == "" {
		capacityType = karpv1.CapacityTypeSpot
	}
	o := cloudprovider.OfferingKey{
		CapacityType: capacityType,
		InstanceType: claim.Labels[corev1.LabelInstanceTypeStable],
		Zone:         zone,
	}
	return o, o.InstanceType != "" && o.Zone != ""
}

// clusterIndex maps instance IDs to the NodeClaims and Nodes that run on them.
type clusterIndex struct {
	claims map[string]*karpv1.NodeClaim
	nodes  map[string]*corev1.Node
}

// indexCluster reads every NodeClaim and Node once per batch: messages name instances, not
// provider IDs (which carry the zone), so the index on provider IDs cannot be used.
func (c *Controller) indexCluster(ctx context.Context) (*clusterIndex, error) {
	var claims karpv1.NodeClaimList
	if err := c.kube.List(ctx, &claims); err != nil {
		return nil, fmt.Errorf("listing nodeclaims: %w", err)
	}
	var nodes corev1.NodeList
	if err := c.kube.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	idx := &clusterIndex{claims: map[string]*karpv1.NodeClaim{}, nodes: map[string]*corev1.Node{}}
	for i := range claims.Items {
		if _, id, err := instance.ParseProviderID(claims.Items[i].Status.ProviderID); err == nil && id != "" {
			idx.claims[id] = &claims.Items[i]
		}
	}
	for i := range nodes.Items {
		if _, id, err := instance.ParseProviderID(nodes.Items[i].Spec.ProviderID); err == nil && id != "" {
			idx.nodes[id] = &nodes.Items[i]
		}
	}
	return idx, nil
}

// terminateNow sets the NodeClaim's termination deadline to now, so its drain does not wait for
// PDBs or graceful pod termination (controller/nodeclaim/termination honours it).
func (c *Controller) terminateNow(ctx context.Context, claim *karpv1.NodeClaim) error {
	if _, ok := claim.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; ok {
		return nil
	}
	stored := claim.DeepCopy()
	if claim.Annotations == nil {
		claim.Annotations = map[string]string{}
	}
	claim.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey] = c.opts.Clock.Now().UTC().Format(time.RFC3339)
	if err := c.kube.Patch(ctx, claim, client.MergeFrom(stored)); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("setting the termination deadline of nodeclaim %s: %w", claim.Name, err))
	}
	return nil
}
