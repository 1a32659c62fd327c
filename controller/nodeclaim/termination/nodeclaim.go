package termination

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/controller/state"
)

// NodeClaimControllerName is the NodeClaim finalizer's controller name in logs and metrics.
const NodeClaimControllerName = "nodeclaim.termination"

const (
	// awaitNodeInterval re-checks a NodeClaim whose Nodes are terminating, in case a Node event
	// is missed.
	awaitNodeInterval = 10 * time.Second
	// awaitInstanceInterval re-checks an instance whose termination has begun but not finished.
	awaitInstanceInterval = 5 * time.Second
)

// NodeClaimController finalizes deleted NodeClaims: it deletes their Nodes, waits for them to
// go, terminates the instance and removes the finalizer once the cloud provider reports the
// instance gone.
type NodeClaimController struct {
	client        client.Client
	cloudProvider cloudprovider.CloudProvider
	recorder      events.EventRecorder
}

// NewNodeClaimController returns a NodeClaimController.
func NewNodeClaimController(c client.Client, cp cloudprovider.CloudProvider, recorder events.EventRecorder) *NodeClaimController {
	return &NodeClaimController{client: c, cloudProvider: cp, recorder: recorder}
}

// Reconcile advances the termination of one deleted NodeClaim. Each step reads the cluster and
// the cloud afresh, so it may be repeated or resumed after a restart.
func (c *NodeClaimController) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	nc := &karpv1.NodeClaim{}
	if err := c.client.Get(ctx, req.NamespacedName, nc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if nc.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(nc, karpv1.TerminationFinalizer) {
		return ctrl.Result{}, nil
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("NodeClaim", map[string]string{"name": nc.Name}, "NodePool", map[string]string{"name": nc.Labels[karpv1.NodePoolLabelKey]}))

	nodes, err := state.NodesForProviderID(ctx, c.client, nc.Status.ProviderID)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(nodes) > 0 {
		// The Node's own finalizer terminates the instance; wait for it to finish.
		for i := range nodes {
			if err := deleteIfPresent(ctx, c.client, &nodes[i]); err != nil {
				return ctrl.Result{}, err
			}
		}
		return ctrl.Result{RequeueAfter: awaitNodeInterval}, nil
	}
	if nc.Status.ProviderID != "" {
		if err := setCondition(ctx, c.client, nc, karpv1.ConditionTypeInstanceTerminating, metav1.ConditionTrue, reasonInstanceTerminating, "Instance is terminating"); err != nil {
			return ctrl.Result{}, err
		}
		gone, err := terminateInstance(ctx, c.cloudProvider, nc)
		if err != nil {
			return ctrl.Result{}, err
		}
		if !gone {
			return ctrl.Result{RequeueAfter: awaitInstanceInterval}, nil
		}
	}
	stored := nc.DeepCopy()
	controllerutil.RemoveFinalizer(nc, karpv1.TerminationFinalizer)
	if err := c.client.Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("removing finalizer: %w", err))
	}
	pool := nc.Labels[karpv1.NodePoolLabelKey]
	nodeClaimsTerminated.WithLabelValues(pool, nc.Labels[karpv1.CapacityTypeLabelKey], nc.Labels[corev1.LabelTopologyZone]).Inc()
	nodeClaimTerminationDuration.WithLabelValues(pool).Observe(time.Since(nc.DeletionTimestamp.Time).Seconds())
	log.FromContext(ctx).Info("deleted nodeclaim", "provider-id", nc.Status.ProviderID)
	c.recorder.Eventf(nc, nil, corev1.EventTypeNormal, "Terminated", "Terminate", "Instance %s terminated", instanceName(nc))
	return ctrl.Result{}, nil
}

// terminateInstance asks the cloud provider to terminate nc's instance and reports whether it is
// gone: the provider answers NodeClaimNotFound once it is.
func terminateInstance(ctx context.Context, cp cloudprovider.CloudProvider, nc *karpv1.NodeClaim) (bool, error) {
	if nc.UID != "" {
		instanceTerminations.first(nc.UID, time.Now())
	}
	err := cp.Delete(ctx, nc)
	switch {
	case cloudprovider.IsNodeClaimNotFoundError(err):
		if began, ok := instanceTerminations.forget(nc.UID); ok && nc.UID != "" {
			instanceTerminationDuration.WithLabelValues(nc.Labels[karpv1.NodePoolLabelKey]).Observe(time.Since(began).Seconds())
		}
		return true, nil
	case err != nil:
		return false, fmt.Errorf("terminating instance %s: %w", nc.Status.ProviderID, err)
	default:
		return false, nil
	}
}

func instanceName(nc *karpv1.NodeClaim) string {
	if nc.Status.ProviderID == "" {
		return "(none launched)"
	}
	return nc.Status.ProviderID
}

// deleteIfPresent deletes obj unless it is already being deleted or gone.
func deleteIfPresent(ctx context.Context, c client.Client, obj client.Object) error {
	if !obj.GetDeletionTimestamp().IsZero() {
		return nil
	}
	if err := c.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting %T %s: %w", obj, obj.GetName(), err)
	}
	return nil
}
