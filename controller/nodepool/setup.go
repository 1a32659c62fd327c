package nodepool

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// SetupWithManager registers the controller: it reconciles NodePools when their spec or
// metadata changes (not on its own status writes), when one of their NodeClaims changes, and
// when a node class of a supported kind changes. Only supported kinds are watched, so a cluster
// need not have the CRDs of other providers installed.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&karpv1.NodePool{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&karpv1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(nodePoolOfNodeClaim))
	for gk, gvk := range c.nodeClasses {
		class, err := newNodeClass(mgr.GetScheme(), gvk)
		if err != nil {
			return err
		}
		b = b.Watches(class, handler.EnqueueRequestsFromMapFunc(c.nodePoolsOfNodeClass(gk.Group, gk.Kind)))
	}
	return b.Complete(c)
}

// nodePoolOfNodeClaim maps a NodeClaim to the NodePool named by its karpenter.sh/nodepool label.
func nodePoolOfNodeClaim(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[karpv1.NodePoolLabelKey]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: name}}}
}

// nodePoolsOfNodeClass maps a node class to the NodePools whose nodeClassRef names it.
func (c *Controller) nodePoolsOfNodeClass(group, kind string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		list := &karpv1.NodePoolList{}
		if err := c.client.List(ctx, list); err != nil {
			log.FromContext(ctx).Error(err, "listing nodepools for a node class change", "nodeClass", obj.GetName())
			return nil
		}
		var requests []reconcile.Request
		for _, np := range list.Items {
			ref := np.Spec.Template.Spec.NodeClassRef
			if ref != nil && ref.Group == group && ref.Kind == kind && ref.Name == obj.GetName() {
				requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKey{Name: np.Name}})
			}
		}
		return requests
	}
}
