package lifecycle

import (
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/controller/state"
)

// maxConcurrentReconciles lets launches, which wait on the cloud, proceed side by side: a
// scale-up of a hundred NodeClaims launches at once, and the AWS provider batches the
// identical ones into one CreateFleet (at 10, a batch could never hold more than 10).
const maxConcurrentReconciles = 100

// SetupWithManager registers the controller: it reconciles NodeClaims, and a NodeClaim again
// whenever the Node with its provider ID changes. The provider-ID indexes
// (state.IndexProviderIDs) must be registered on mgr.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&karpv1.NodeClaim{}).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(state.NodeClaimsOfNode(c.client))).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrentReconciles}).
		Complete(c)
}
