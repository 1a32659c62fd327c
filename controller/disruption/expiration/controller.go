// Package expiration is the nodeclaim.expiration controller: a NodeClaim whose
// spec.expireAfter has passed since its creation is deleted right away — a forceful method,
// with no budget and no replacement launched first (the seeds' "Expiration"). The drain still
// honours PDBs and do-not-disrupt until the NodeClaim's terminationGracePeriod ends; the
// Provisioner plans capacity for the pods as they are evicted.
package expiration

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/controller/disruption"
)

// Name is the controller's name in logs and metrics.
const Name = "nodeclaim.expiration"

// ReasonExpired is the disruption reason of expiration, in events and metrics.
const ReasonExpired = "Expired"

// Controller deletes expired NodeClaims.
type Controller struct {
	client   client.Client
	recorder events.EventRecorder
	clock    clock.PassiveClock
	preplan  cloudprovider.Preplanner
}

// New returns the controller; clk is the real clock when nil. preplan, when not nil, launches
// replacement capacity for an expired NodeClaim's pods as it is deleted.
func New(c client.Client, recorder events.EventRecorder, clk clock.PassiveClock, preplan cloudprovider.Preplanner) *Controller {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Controller{client: c, recorder: recorder, clock: clk, preplan: preplan}
}

// ExpiresAt returns when nc expires, and false for expireAfter: Never.
func ExpiresAt(nc *karpv1.NodeClaim) (time.Time, bool) {
	if nc.Spec.ExpireAfter.IsNever() {
		return time.Time{}, false
	}
	return nc.CreationTimestamp.Add(*nc.Spec.ExpireAfter.Duration), true
}

// Reconcile deletes one NodeClaim if it has expired, else looks again when it will.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &karpv1.NodeClaim{}
	if err := c.client.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if nc.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	at, ok := ExpiresAt(nc)
	if !ok {
		return reconcile.Result{}, nil
	}
	if wait := at.Sub(c.clock.Now()); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	logger := log.FromContext(ctx).WithValues("nodeclaim", nc.Name)
	var replacements []string
	if c.preplan != nil {
		// Forceful: a failed pre-plan does not hold the expiration back.
		var err error
		if replacements, err = c.preplan.Preplan(ctx, "expiration", nc); err != nil {
			logger.Error(err, "pre-planning capacity for an expired nodeclaim's pods")
		}
	}
	if err := c.client.Delete(ctx, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("deleting expired nodeclaim %s: %w", nc.Name, err))
	}
	logger.Info("deleting expired nodeclaim", "expireAfter", nc.Spec.ExpireAfter.String(), "node", nc.Status.NodeName, "replacements", replacements)
	c.recorder.Eventf(nc, nil, corev1.EventTypeNormal, disruption.EventDisruptionTerminating, "Expire",
		"Disrupting NodeClaim: %s (expireAfter %s)", ReasonExpired, nc.Spec.ExpireAfter.String())
	disruption.RecordDisrupted(ReasonExpired, nc)
	return reconcile.Result{}, nil
}

// SetupWithManager registers the controller on NodeClaims.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named(Name).For(&karpv1.NodeClaim{}).Complete(c)
}
