package nodeclass

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// SetupWithManager registers the controller: it reconciles EC2NodeClasses when their spec or
// metadata changes (not on its own status writes; periodic re-resolution comes from requeues),
// and a deleting class when one of its NodeClaims goes away.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&awsv1.EC2NodeClass{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, deletionStarted{}))).
		Watches(&karpv1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(classOfNodeClaim),
			builder.WithPredicates(predicate.Funcs{
				CreateFunc: func(event.CreateEvent) bool { return false },
				UpdateFunc: func(event.UpdateEvent) bool { return false },
			})).
		Complete(c)
}

// classOfNodeClaim maps a NodeClaim to the EC2NodeClass it uses.
func classOfNodeClaim(_ context.Context, obj client.Object) []reconcile.Request {
	nc, ok := obj.(*karpv1.NodeClaim)
	if !ok || nc.Spec.NodeClassRef == nil || !usesClass(nc, nc.Spec.NodeClassRef.Name) {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: nc.Spec.NodeClassRef.Name}}}
}

// deletionStarted passes the update that sets a deletion timestamp, which changes neither the
// generation of every object nor its annotations.
type deletionStarted struct{ predicate.Funcs }

func (deletionStarted) Update(e event.UpdateEvent) bool {
	return e.ObjectOld != nil && e.ObjectNew != nil &&
		e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
}
