package volatile

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Name is the controller's name in logs and metrics.
const Name = "pod.volatilerequests"

// Refresh is how long a prediction is trusted without a template change: what admission
// gives (a VPA recommendation) changes without one.
const Refresh = 5 * time.Minute

// Controller keeps the cache's predictions for the owners of annotated pods.
type Controller struct {
	client    client.Client
	predictor *Predictor
	cache     *Cache
	now       func() time.Time
}

// NewController returns the controller over cache.
func NewController(c client.Client, predictor *Predictor, cache *Cache) *Controller {
	return &Controller{client: c, predictor: predictor, cache: cache, now: time.Now}
}

// SetupWithManager reconciles annotated pods.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	annotated := predicate.NewPredicateFuncs(func(obj client.Object) bool {
		return obj.GetAnnotations()[Annotation] == "true"
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&corev1.Pod{}, builder.WithPredicates(annotated)).
		Complete(c)
}

// Reconcile makes sure the pod's owner has a prediction from its current template, at most
// Refresh old.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := c.client.Get(ctx, req.NamespacedName, pod); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !Volatile(pod) || pod.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	owner, err := c.predictor.OwnerOf(ctx, pod)
	if err != nil || owner == nil {
		return reconcile.Result{}, err // unowned pods are skipped
	}
	if p, ok := c.cache.Fresh(owner); ok && c.now().Sub(p.Made) < Refresh {
		return reconcile.Result{RequeueAfter: Refresh - c.now().Sub(p.Made)}, nil
	}
	p, err := c.predictor.DryRun(ctx, owner)
	if err != nil {
		return reconcile.Result{}, err
	}
	c.cache.Put(owner.Key, p)
	log.FromContext(ctx).V(1).Info("predicted volatile requests", "owner", owner.Ref.Kind+"/"+owner.Ref.Name, "requests", p.String())
	return reconcile.Result{RequeueAfter: Refresh}, nil
}
