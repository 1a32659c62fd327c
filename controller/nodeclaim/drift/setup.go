package drift

import (
	"context"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// maxConcurrentReconciles lets cloud provider drift checks, which may call the cloud, run side
// by side.
const maxConcurrentReconciles = 10

// SetupWithManager registers the controller. It reconciles a NodeClaim when what drift is
// judged on changes: the NodeClaim's metadata or its Launched condition (not its other status,
// so its own writes do not loop), its NodePool's spec or hash, or its node class (any change,
// status included: re-resolved AMIs or subnets are what the cloud provider compares). Only the
// node class kinds the cloud provider supports are watched, so other providers' CRDs need not
// be installed.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&karpv1.NodeClaim{}, builder.WithPredicates(driftInputsChanged{})).
		Watches(&karpv1.NodePool{}, handler.EnqueueRequestsFromMapFunc(c.nodeClaimsOfNodePool),
			builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrentReconciles})
	for _, class := range c.cloudProvider.GetSupportedNodeClasses() {
		gvk, err := apiutil.GVKForObject(class, mgr.GetScheme())
		if err != nil {
			return fmt.Errorf("node class %T: %w", class, err)
		}
		b = b.Watches(class, handler.EnqueueRequestsFromMapFunc(c.nodeClaimsOfNodeClass(gvk.GroupKind())))
	}
	return b.Complete(c)
}

// nodeClaimsOfNodePool maps a NodePool to the NodeClaims labelled with its name.
func (c *Controller) nodeClaimsOfNodePool(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &karpv1.NodeClaimList{}
	if err := c.client.List(ctx, list, client.MatchingLabels{karpv1.NodePoolLabelKey: obj.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "listing nodeclaims for a nodepool change", "nodePool", obj.GetName())
		return nil
	}
	return requests(list.Items, func(karpv1.NodeClaim) bool { return true })
}

// nodeClaimsOfNodeClass maps a node class of kind gk to the NodeClaims whose nodeClassRef
// names it.
func (c *Controller) nodeClaimsOfNodeClass(gk schema.GroupKind) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		list := &karpv1.NodeClaimList{}
		if err := c.client.List(ctx, list); err != nil {
			log.FromContext(ctx).Error(err, "listing nodeclaims for a node class change", "nodeClass", obj.GetName())
			return nil
		}
		return requests(list.Items, func(nc karpv1.NodeClaim) bool {
			ref := nc.Spec.NodeClassRef
			return ref != nil && ref.GroupKind() == gk && ref.Name == obj.GetName()
		})
	}
}

func requests(items []karpv1.NodeClaim, keep func(karpv1.NodeClaim) bool) []reconcile.Request {
	var out []reconcile.Request
	for _, nc := range items {
		if keep(nc) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Name: nc.Name}})
		}
	}
	return out
}

// driftInputsChanged passes NodeClaim events that can change the drift verdict: creation,
// and updates of the spec, labels, annotations or the Launched condition. Updates of the rest
// of the status, the Drifted condition in particular, are left to the periodic check.
type driftInputsChanged struct{ predicate.Funcs }

func (driftInputsChanged) Delete(event.DeleteEvent) bool { return false }

func (driftInputsChanged) Update(e event.UpdateEvent) bool {
	oldNC, ok1 := e.ObjectOld.(*karpv1.NodeClaim)
	newNC, ok2 := e.ObjectNew.(*karpv1.NodeClaim)
	if !ok1 || !ok2 {
		return true
	}
	return oldNC.Generation != newNC.Generation ||
		!maps.Equal(oldNC.Labels, newNC.Labels) ||
		!maps.Equal(oldNC.Annotations, newNC.Annotations) ||
		launched(oldNC) != launched(newNC)
}

func launched(nc *karpv1.NodeClaim) bool {
	return meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeLaunched)
}
