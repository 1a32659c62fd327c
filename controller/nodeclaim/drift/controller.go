// Package drift is the nodeclaim.drift controller: it marks a launched NodeClaim with the
// Drifted status condition when it no longer matches its NodePool or NodeClass, and removes the
// condition once it matches again. Replacing drifted nodes is disruption's job, not this one's.
//
// Drift is looked for in Karpenter's order, cheapest first: the NodePool's template hash
// (NodePoolDrifted), the NodePool's requirements against the NodeClaim's labels
// (RequirementsDrifted), then the cloud provider (CloudProvider.IsDrifted, e.g. AMIDrift).
package drift

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
)

// Name is the controller's name in logs and metrics.
const Name = "nodeclaim.drift"

// DefaultInterval is how often a NodeClaim is checked again without any watched change, so
// that drift the cloud provider sees (a new AMI, a subnet gone) is noticed even when no object
// in the cluster changes.
const DefaultInterval = 5 * time.Minute

// Options configure a Controller; zero values take the defaults.
type Options struct {
	// Interval is the time between checks of a NodeClaim; DefaultInterval if zero.
	Interval time.Duration
	// Clock is the time source of condition transitions; the real clock if nil.
	Clock clock.PassiveClock
}

// Controller sets and clears NodeClaims' Drifted condition.
type Controller struct {
	client        client.Client
	cloudProvider cloudprovider.CloudProvider
	clock         clock.PassiveClock
	interval      time.Duration
}

// New returns a Controller that asks cp about drift of the NodeClass.
func New(c client.Client, cp cloudprovider.CloudProvider, opts Options) *Controller {
	if opts.Interval == 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Controller{client: c, cloudProvider: cp, clock: opts.Clock, interval: opts.Interval}
}

// Reconcile brings one NodeClaim's Drifted condition up to date.
func (c *Controller) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	nc := &karpv1.NodeClaim{}
	if err := c.client.Get(ctx, req.NamespacedName, nc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !nc.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // already going away; drift changes nothing
	}
	poolName := nc.Labels[karpv1.NodePoolLabelKey]
	if poolName == "" {
		return ctrl.Result{}, nil // not made from a NodePool, so nothing to drift from
	}
	np := &karpv1.NodePool{}
	if err := c.client.Get(ctx, client.ObjectKey{Name: poolName}, np); err != nil {
		// A NodePool deleted takes its NodeClaims with it; there is nothing to compare against.
		return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("getting nodepool %s: %w", poolName, err))
	}
	logger := log.FromContext(ctx).WithValues("NodeClaim", map[string]string{"name": nc.Name}, "NodePool", map[string]string{"name": np.Name})
	ctx = log.IntoContext(ctx, logger)

	beforeStamp := nc.DeepCopy()
	if restampHash(np, nc) {
		// Optimistic locking: a concurrent change fails the patch instead of being overwritten.
		if err := c.client.Patch(ctx, nc, client.MergeFromWithOptions(beforeStamp, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("patching nodeclaim hash annotations: %w", err))
		}
		logger.V(1).Info("took the nodepool's new hash version", "hashVersion", nc.Annotations[karpv1.NodePoolHashVersionAnnotationKey])
	}

	stored := nc.DeepCopy()
	wasDrifted := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDrifted) != nil
	if !meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeLaunched) {
		// Nothing was launched yet, so nothing can have drifted.
		meta.RemoveStatusCondition(&nc.Status.Conditions, karpv1.ConditionTypeDrifted)
		return ctrl.Result{}, c.patchStatus(ctx, stored, nc)
	}
	found, drifted, err := c.detect(ctx, np, nc)
	if err != nil {
		if cloudprovider.IsNodeClaimNotFoundError(err) {
			return ctrl.Result{}, nil // the instance is gone; garbage collection handles that
		}
		return ctrl.Result{}, err
	}
	if !drifted {
		meta.RemoveStatusCondition(&nc.Status.Conditions, karpv1.ConditionTypeDrifted)
		if err := c.patchStatus(ctx, stored, nc); err != nil {
			return ctrl.Result{}, err
		}
		if wasDrifted {
			logger.Info("removing drifted status condition, no longer drifted")
		}
		return ctrl.Result{RequeueAfter: c.interval}, nil
	}
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{
		Type:               karpv1.ConditionTypeDrifted,
		Status:             metav1.ConditionTrue,
		Reason:             string(found.reason),
		Message:            found.message,
		ObservedGeneration: nc.Generation,
		LastTransitionTime: metav1.NewTime(c.clock.Now()),
	})
	if err := c.patchStatus(ctx, stored, nc); err != nil {
		return ctrl.Result{}, err
	}
	if !wasDrifted {
		logger.Info("marking drifted", "reason", found.reason, "message", found.message)
		driftedTotal.WithLabelValues(string(found.reason), np.Name).Inc()
	}
	return ctrl.Result{RequeueAfter: c.interval}, nil
}

// detect returns the first drift found, checking the NodePool before asking the cloud
// provider, which may cost an API call.
func (c *Controller) detect(ctx context.Context, np *karpv1.NodePool, nc *karpv1.NodeClaim) (finding, bool, error) {
	if f, ok := staticDrift(np, nc); ok {
		return f, true, nil
	}
	if f, ok := requirementsDrift(np, nc); ok {
		return f, true, nil
	}
	reason, err := c.cloudProvider.IsDrifted(ctx, nc)
	if err != nil {
		return finding{}, false, fmt.Errorf("asking the %s cloud provider about drift: %w", c.cloudProvider.Name(), err)
	}
	if reason == "" {
		return finding{}, false, nil
	}
	return finding{
		reason:  reason,
		message: fmt.Sprintf("the %s cloud provider reports %s: the instance no longer matches its NodeClass", c.cloudProvider.Name(), reason),
	}, true, nil
}

// patchStatus writes nc's status if it differs from stored. The patch carries the
// resourceVersion it was computed from, so a concurrent status change (the lifecycle
// controller's) fails it instead of being overwritten, and the NodeClaim is reconciled again.
func (c *Controller) patchStatus(ctx context.Context, stored, nc *karpv1.NodeClaim) error {
	if equality.Semantic.DeepEqual(stored.Status, nc.Status) {
		return nil
	}
	if err := c.client.Status().Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("patching nodeclaim status: %w", err)
	}
	return nil
}
