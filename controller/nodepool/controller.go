// Package nodepool is the nodepool.status controller: it keeps a NodePool's status (the summed
// capacity and count of its NodeClaims, and the NodeClassReady, ValidationSucceeded and Ready
// conditions) and its karpenter.sh/nodepool-hash annotations up to date.
package nodepool

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
)

// Name is the controller's name in logs and metrics.
const Name = "nodepool.status"

// Controller reconciles NodePools' status and hash annotations.
type Controller struct {
	client      client.Client
	nodeClasses map[schema.GroupKind]schema.GroupVersionKind
	clock       clock.PassiveClock
}

// New returns a Controller. nodeClasses are the classes the cloud provider launches
// (CloudProvider.GetSupportedNodeClasses), whose kinds c's scheme must know; a NodePool
// referring to any other kind is not ready. clk is the time source for condition transitions;
// the real clock if nil.
func New(c client.Client, nodeClasses []cloudprovider.NodeClass, clk clock.PassiveClock) (*Controller, error) {
	if clk == nil {
		clk = clock.RealClock{}
	}
	supported, err := supportedNodeClasses(c.Scheme(), nodeClasses)
	if err != nil {
		return nil, err
	}
	return &Controller{client: c, nodeClasses: supported, clock: clk}, nil
}

// Reconcile recomputes one NodePool's annotations and status and writes only what changed, so
// the writes' own watch events settle instead of looping.
func (c *Controller) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	np := &karpv1.NodePool{}
	if err := c.client.Get(ctx, req.NamespacedName, np); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !np.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // its NodeClaims go with it through owner references
	}

	if err := c.updateHash(ctx, np); err != nil {
		return ctrl.Result{}, err
	}

	stored := np.DeepCopy()
	nodeClaims, err := nodeClaimsOf(ctx, c.client, np.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	np.Status.Resources = sumCapacity(nodeClaims)
	np.Status.Nodes = ptr.To(int64(len(nodeClaims)))

	readiness, err := checkNodeClass(ctx, c.client, c.nodeClasses, np.Spec.Template.Spec.NodeClassRef)
	if err != nil {
		return ctrl.Result{}, err
	}
	now := metav1.NewTime(c.clock.Now())
	setNodeClassReady(np, readiness, now)
	setValidationSucceeded(np, now)
	setReady(np, now)

	if equality.Semantic.DeepEqual(stored.Status, np.Status) {
		return ctrl.Result{}, nil
	}
	// Optimistic locking: a status computed from a stale read fails and is recomputed.
	if err := c.client.Status().Patch(ctx, np, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("patching nodepool %s status: %w", np.Name, err))
	}
	return ctrl.Result{}, nil
}

// updateHash patches the hash annotations when the template changed since they were written.
func (c *Controller) updateHash(ctx context.Context, np *karpv1.NodePool) error {
	stored := np.DeepCopy()
	changed, err := stampHash(np)
	if err != nil || !changed {
		return err
	}
	if err := c.client.Patch(ctx, np, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("patching nodepool %s hash annotations: %w", np.Name, err))
	}
	return nil
}
