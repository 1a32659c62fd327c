package termination

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/controller/state"
)

// deleting passes only objects that are being deleted: the rest need no finalizer work, and
// Nodes change often (heartbeats).
var deleting = predicate.NewPredicateFuncs(func(obj client.Object) bool { return !obj.GetDeletionTimestamp().IsZero() })

// nodeGoing passes Node events that can unblock a NodeClaim's termination: the Node being
// deleted or gone.
var nodeGoing = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	UpdateFunc:  func(e event.UpdateEvent) bool { return !e.ObjectNew.GetDeletionTimestamp().IsZero() },
	DeleteFunc:  func(event.DeleteEvent) bool { return true },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// SetupWithManager registers the NodeClaim finalizer controller; it also looks again when a
// Node with the NodeClaim's provider ID changes. The provider-ID indexes
// (state.IndexProviderIDs) must be registered on mgr.
func (c *NodeClaimController) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(NodeClaimControllerName).
		For(&karpv1.NodeClaim{}, builder.WithPredicates(deleting)).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(state.NodeClaimsOfNode(c.client)), builder.WithPredicates(nodeGoing)).
		Complete(c)
}

// eventSource names the reporter of drain events when no recorder was given; it matches the
// NodeClaim controllers' so `kubectl describe` reads as Karpenter's documentation shows.
const eventSource = "karpenter"

// deletesOnly passes only deletions: a termination awaiting volume detachment waits for its
// VolumeAttachments to be deleted, and a drain waiting for its node's pods to go looks again
// as each goes, not at its next poll (drainPollInterval). A node not being deleted costs one
// cached read.
var deletesOnly = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	UpdateFunc:  func(event.UpdateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return true },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// toNodes maps an object to the Nodes nodeNames (one of the indexes' extractors) names for it.
func toNodes(nodeNames func(client.Object) []string) handler.MapFunc {
	return func(_ context.Context, obj client.Object) []reconcile.Request {
		names := nodeNames(obj)
		out := make([]reconcile.Request, 0, len(names))
		for _, name := range names {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
		}
		return out
	}
}

// nodeOfVolumeAttachment maps a VolumeAttachment to its Node, nodeOfPod a bound pod to its.
var (
	nodeOfVolumeAttachment = toNodes(volumeAttachmentNodeName)
	nodeOfPod              = toNodes(podNodeName)
)

// SetupWithManager registers the Node finalizer controller and the pod and VolumeAttachment
// indexes its drain lists by; it looks at a terminating Node again when one of its
// VolumeAttachments is deleted.
func (c *NodeController) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, PodNodeNameField, podNodeName); err != nil {
		return fmt.Errorf("indexing pods by node: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &storagev1.VolumeAttachment{}, VolumeAttachmentNodeNameField, volumeAttachmentNodeName); err != nil {
		return fmt.Errorf("indexing volume attachments by node: %w", err)
	}
	if c.drainer.recorder == nil {
		c.drainer.recorder = mgr.GetEventRecorder(eventSource)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(NodeControllerName).
		For(&corev1.Node{}, builder.WithPredicates(deleting)).
		Watches(&storagev1.VolumeAttachment{}, handler.EnqueueRequestsFromMapFunc(nodeOfVolumeAttachment), builder.WithPredicates(deletesOnly)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(nodeOfPod), builder.WithPredicates(deletesOnly)).
		Complete(c)
}
