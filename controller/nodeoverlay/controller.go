// Package nodeoverlay is the nodeoverlay.status controller (behind the NodeOverlay gate): it
// feeds the cluster's NodeOverlays to the overlay the cloud provider applies to its instance
// types, evaluates every NodePool's catalog through the provider, and writes each overlay's
// Ready condition: True (Applied), or False with reason Conflict naming the same-weight overlay
// it lost a field to (the overlay still applies where it does not conflict: fail open), or
// False with reason Invalid.
package nodeoverlay

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/apis/karpenter/v1alpha1"
	"github.com/joinery-dev/joinery/cloudprovider"
)

// Name is the controller's name in logs and metrics.
const Name = "nodeoverlay.status"

// EventConflict is the Warning event an overlay gets when it starts losing to another.
const EventConflict = "NodeOverlayConflict"

// Resync is how often the status is recomputed without any event: the provider's catalog
// (instance types, prices) changes on its own.
const Resync = 5 * time.Minute

// key is the one request: every overlay's status depends on every overlay and NodePool.
var key = types.NamespacedName{Name: "nodeoverlays"}

// Controller writes NodeOverlays' Ready condition.
type Controller struct {
	client   client.Client
	provider cloudprovider.InstanceTypeLister
	overlays *cloudprovider.NodeOverlays
	recorder events.EventRecorder
	clock    clock.PassiveClock
}

// New returns the controller. overlays must be the set provider applies; clk nil means the
// real clock.
func New(c client.Client, provider cloudprovider.InstanceTypeLister, overlays *cloudprovider.NodeOverlays, recorder events.EventRecorder, clk clock.PassiveClock) *Controller {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Controller{client: c, provider: provider, overlays: overlays, recorder: recorder, clock: clk}
}

// SetupWithManager keeps overlays current from the manager's informer (every reader of the
// provider's catalog sees a change at once) and registers the status controller, which runs on
// any overlay or NodePool change and every Resync.
func (c *Controller) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	informer, err := mgr.GetCache().GetInformer(ctx, &v1alpha1.NodeOverlay{})
	if err != nil {
		return fmt.Errorf("watching NodeOverlays: %w", err)
	}
	if _, err := informer.AddEventHandler(c.overlays.EventHandler()); err != nil {
		return fmt.Errorf("watching NodeOverlays: %w", err)
	}
	all := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: key}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		Watches(&v1alpha1.NodeOverlay{}, all).
		Watches(&karpv1.NodePool{}, all).
		Complete(c)
}

// Reconcile evaluates every NodePool's catalog with the current overlays and writes the
// overlays' conditions that changed.
func (c *Controller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	var overlays v1alpha1.NodeOverlayList
	if err := c.client.List(ctx, &overlays); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodeoverlays: %w", err)
	}
	// The list is at least as new as what the informer handed the set so far.
	c.overlays.Replace(overlays.Items)

	var pools karpv1.NodePoolList
	if err := c.client.List(ctx, &pools); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodepools: %w", err)
	}
	var evaluated []string
	for i := range pools.Items {
		np := &pools.Items[i]
		if np.DeletionTimestamp != nil {
			continue
		}
		// The provider applies the overlays as it lists; that evaluation is what conflicts are
		// read from.
		if _, err := c.provider.GetInstanceTypes(ctx, np); err != nil {
			logger.V(1).Info("nodepool's instance types unavailable; its conflicts are not known", "nodepool", np.Name, "error", err.Error())
			continue
		}
		evaluated = append(evaluated, np.Name)
	}
	conflicts := c.overlays.Conflicts(evaluated...)
	invalid := c.overlays.Invalid()

	now := metav1.NewTime(c.clock.Now())
	for i := range overlays.Items {
		o := &overlays.Items[i]
		cond := metav1.Condition{Type: v1alpha1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ConditionReasonApplied,
			ObservedGeneration: o.Generation, LastTransitionTime: now}
		switch {
		case invalid[o.Name] != nil:
			cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, v1alpha1.ConditionReasonInvalid, invalid[o.Name].Error()
		case conflicts[o.Name] != "":
			cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, v1alpha1.ConditionReasonConflict, conflicts[o.Name]
		}
		if err := c.setReady(ctx, o, cond); err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{RequeueAfter: Resync}, nil
}

// setReady writes cond when it differs from o's Ready, with a Warning event when the overlay
// starts conflicting.
func (c *Controller) setReady(ctx context.Context, o *v1alpha1.NodeOverlay, cond metav1.Condition) error {
	old := meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionTypeReady)
	if old != nil && old.Status == cond.Status && old.Reason == cond.Reason && old.Message == cond.Message && old.ObservedGeneration == cond.ObservedGeneration {
		return nil
	}
	stored := o.DeepCopy()
	meta.SetStatusCondition(&o.Status.Conditions, cond)
	if err := c.client.Status().Patch(ctx, o, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("updating nodeoverlay %s status: %w", o.Name, err))
	}
	if cond.Reason == v1alpha1.ConditionReasonConflict && (old == nil || old.Reason != cond.Reason || old.Message != cond.Message) && c.recorder != nil {
		c.recorder.Eventf(o, nil, corev1.EventTypeWarning, EventConflict, "Evaluate", "%s", cond.Message)
	}
	return nil
}
