package termination

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/controller/state"
)

// NodeControllerName is the Node finalizer's controller name in logs and metrics.
const NodeControllerName = "node.termination"

// NodeController finalizes deleted Nodes that joinery registered: it deletes their NodeClaims
// (a user deleting the Node means the capacity should go), drains the Node, begins the
// instance's termination and releases the Node.
type NodeController struct {
	client        client.Client
	cloudProvider cloudprovider.CloudProvider
	drainer       *drainer
}

// NodeOption configures a NodeController.
type NodeOption func(*NodeController)

// WithEventRecorder sets where drain events go; by default SetupWithManager takes the
// manager's recorder.
func WithEventRecorder(r events.EventRecorder) NodeOption {
	return func(c *NodeController) { c.drainer.recorder = r }
}

// WithClock sets the clock that times terminationGracePeriod; the default is the real clock.
func WithClock(clk clock.PassiveClock) NodeOption {
	return func(c *NodeController) { c.drainer.clock = clk }
}

// NewNodeController returns a NodeController. Pods must be indexed by PodNodeNameField on the
// client's cache (SetupWithManager does so).
func NewNodeController(c client.Client, cp cloudprovider.CloudProvider, opts ...NodeOption) *NodeController {
	nc := &NodeController{client: c, cloudProvider: cp, drainer: &drainer{client: c, clock: clock.RealClock{}, backoff: newBackoff()}}
	for _, opt := range opts {
		opt(nc)
	}
	return nc
}

// Reconcile advances the termination of one deleted Node.
func (c *NodeController) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	node := &corev1.Node{}
	if err := c.client.Get(ctx, req.NamespacedName, node); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if node.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(node, karpv1.TerminationFinalizer) {
		return ctrl.Result{}, nil
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("Node", map[string]string{"name": node.Name}, "NodePool", map[string]string{"name": node.Labels[karpv1.NodePoolLabelKey]}))

	claims, err := state.NodeClaimsForProviderID(ctx, c.client, node.Spec.ProviderID)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(claims) == 0 {
		// Nothing claims the node: the NodeClaim's own termination is over or never happened,
		// so there is nothing to drain for; release the node, terminating its instance first so
		// nothing leaks.
		if err := c.terminateOrphan(ctx, node); err != nil {
			return ctrl.Result{}, err
		}
		return c.release(ctx, node, "released node without a nodeclaim")
	}
	for i := range claims {
		if err := deleteIfPresent(ctx, c.client, &claims[i]); err != nil {
			return ctrl.Result{}, err
		}
	}
	claim := &claims[0]
	wait, err := c.drainer.drain(ctx, node, claim)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("draining node %s: %w", node.Name, err)
	}
	if wait > 0 {
		if err := setCondition(ctx, c.client, claim, karpv1.ConditionTypeDrained, metav1.ConditionUnknown, reasonDraining, "Draining"); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	if err := setCondition(ctx, c.client, claim, karpv1.ConditionTypeDrained, metav1.ConditionTrue, karpv1.ConditionTypeDrained, ""); err != nil {
		return ctrl.Result{}, err
	}
	if drainedNodes.first(node.UID, time.Now()) {
		nodesDrained.WithLabelValues(node.Labels[karpv1.NodePoolLabelKey]).Inc()
	}
	if wait, err = c.drainer.awaitVolumeDetachment(ctx, node, claim); err != nil {
		return ctrl.Result{}, fmt.Errorf("awaiting volume detachment of node %s: %w", node.Name, err)
	}
	if wait > 0 {
		if err := setCondition(ctx, c.client, claim, karpv1.ConditionTypeVolumesDetached, metav1.ConditionUnknown, reasonAwaitingVolumeDetachment, "Awaiting Volume Detachment"); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	if err := setCondition(ctx, c.client, claim, karpv1.ConditionTypeVolumesDetached, metav1.ConditionTrue, karpv1.ConditionTypeVolumesDetached, ""); err != nil {
		return ctrl.Result{}, err
	}
	if claim.Status.ProviderID != "" {
		// Termination has begun (or is complete) once Delete succeeds; the NodeClaim's finalizer
		// waits for it to finish.
		if err := setCondition(ctx, c.client, claim, karpv1.ConditionTypeInstanceTerminating, metav1.ConditionTrue, reasonInstanceTerminating, "Instance is terminating"); err != nil {
			return ctrl.Result{}, err
		}
		if _, err := terminateInstance(ctx, c.cloudProvider, claim); err != nil {
			return ctrl.Result{}, err
		}
	}
	return c.release(ctx, node, "deleted node")
}

// terminateOrphan begins terminating the instance of a node no NodeClaim claims, by its
// provider ID; an instance already gone counts as done.
func (c *NodeController) terminateOrphan(ctx context.Context, node *corev1.Node) error {
	if node.Spec.ProviderID == "" {
		return nil
	}
	instance := &karpv1.NodeClaim{}
	instance.Name = node.Name
	instance.Status.ProviderID = node.Spec.ProviderID
	_, err := terminateInstance(ctx, c.cloudProvider, instance)
	return err
}

// release removes the termination finalizer from node so the API server deletes it.
func (c *NodeController) release(ctx context.Context, node *corev1.Node, message string) (ctrl.Result, error) {
	// Re-read: terminating the instance may have touched the Node (the kwok provider deletes it).
	if err := c.client.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	stored := node.DeepCopy()
	controllerutil.RemoveFinalizer(node, karpv1.TerminationFinalizer)
	if err := c.client.Patch(ctx, node, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("removing finalizer: %w", err))
	}
	drainedNodes.forget(node.UID)
	pool, zone := nodeLabels(node)
	nodesTerminated.WithLabelValues(pool, zone).Inc()
	nodeTerminationDuration.WithLabelValues(pool).Observe(time.Since(node.DeletionTimestamp.Time).Seconds())
	nodeLifetime.WithLabelValues(pool).Observe(time.Since(node.CreationTimestamp.Time).Seconds())
	log.FromContext(ctx).Info(message, "provider-id", node.Spec.ProviderID)
	return ctrl.Result{}, nil
}
