// Package repair is the node.health controller (Node Auto Repair, behind the NodeRepair
// feature gate): a Node whose condition matches one of the cloud provider's repair policies
// for longer than the policy's toleration has its NodeClaim deleted forcefully — the
// termination deadline is set to now, so the drain does not wait for PDBs or do-not-disrupt —
// unless more than 20% of its NodePool's nodes (of the cluster's, for a standalone NodeClaim)
// are unhealthy, which would point at a cause that replacing nodes does not fix.
package repair

import (
	"context"
	"fmt"
	"math"
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
	"github.com/joinery-dev/joinery/controller/state"
)

// Name is the controller's name in logs and metrics.
const Name = "node.health"

// UnhealthyThreshold is the share of a NodePool's nodes that may be unhealthy for repair to
// act (rounded up).
const UnhealthyThreshold = 0.20

// Options tune the controller.
type Options struct {
	// Toleration, when positive, replaces every policy's toleration duration. For tests and
	// demonstrations only; the providers' policies are the documented ones.
	Toleration time.Duration
	// Preplan, when not nil, launches capacity for the pods before the NodeClaim goes.
	Preplan cloudprovider.Preplanner
}

// Controller repairs unhealthy nodes.
type Controller struct {
	client   client.Client
	policies []cloudprovider.RepairPolicy
	recorder events.EventRecorder
	clock    clock.PassiveClock
	preplan  cloudprovider.Preplanner
}

// New returns the controller over the provider's policies. opts.Preplan, when not nil,
// launches replacement capacity for the unhealthy node's pods as its NodeClaim is deleted.
func New(c client.Client, cp cloudprovider.CloudProvider, recorder events.EventRecorder, clk clock.PassiveClock, opts Options) *Controller {
	if clk == nil {
		clk = clock.RealClock{}
	}
	policies := cp.RepairPolicies()
	if opts.Toleration > 0 {
		policies = append([]cloudprovider.RepairPolicy(nil), policies...)
		for i := range policies {
			policies[i].TolerationDuration = opts.Toleration
		}
	}
	return &Controller{client: c, policies: policies, recorder: recorder, clock: clk, preplan: opts.Preplan}
}

// unhealthy returns the policy node violates and when the violation began, or false.
func unhealthy(node *corev1.Node, policies []cloudprovider.RepairPolicy) (cloudprovider.RepairPolicy, time.Time, bool) {
	for _, p := range policies {
		for _, c := range node.Status.Conditions {
			if c.Type == p.ConditionType && c.Status == p.ConditionStatus {
				return p, c.LastTransitionTime.Time, true
			}
		}
	}
	return cloudprovider.RepairPolicy{}, time.Time{}, false
}

// Reconcile looks at one Node.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node := &corev1.Node{}
	if err := c.client.Get(ctx, req.NamespacedName, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if node.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	policy, since, bad := unhealthy(node, c.policies)
	if !bad {
		return reconcile.Result{}, nil
	}
	if wait := since.Add(policy.TolerationDuration).Sub(c.clock.Now()); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	ncs, err := state.NodeClaimsForProviderID(ctx, c.client, node.Spec.ProviderID)
	if err != nil {
		return reconcile.Result{}, err
	}
	if len(ncs) != 1 || ncs[0].DeletionTimestamp != nil {
		return reconcile.Result{}, nil // not ours, or already going
	}
	nc := &ncs[0]
	logger := log.FromContext(ctx).WithValues("node", node.Name, "nodeclaim", nc.Name, "condition", policy.ConditionType, "status", policy.ConditionStatus)
	ok, unhealthyCount, total, err := c.withinThreshold(ctx, nc.Labels[karpv1.NodePoolLabelKey])
	if err != nil {
		return reconcile.Result{}, err
	}
	if !ok {
		logger.Info("not repairing: too many unhealthy nodes", "unhealthy", unhealthyCount, "nodes", total)
		c.recorder.Eventf(node, nil, corev1.EventTypeWarning, disruption.EventDisruptionBlocked, "Repair",
			"Cannot repair Node: %d of %d nodes are unhealthy, more than %d%%", unhealthyCount, total, int(UnhealthyThreshold*100))
		return reconcile.Result{RequeueAfter: time.Minute}, nil
	}
	var replacements []string
	if c.preplan != nil {
		// Forceful: a failed pre-plan does not hold the repair back.
		if replacements, err = c.preplan.Preplan(ctx, "repair", nc); err != nil {
			logger.Error(err, "pre-planning capacity for an unhealthy node's pods")
		}
	}
	// Forceful: the termination deadline is now, so the drain deletes the pods at once.
	stored := nc.DeepCopy()
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey] = c.clock.Now().UTC().Format(time.RFC3339)
	if err := c.client.Patch(ctx, nc, client.MergeFrom(stored)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("setting termination deadline on nodeclaim %s: %w", nc.Name, err))
	}
	if err := c.client.Delete(ctx, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("deleting unhealthy nodeclaim %s: %w", nc.Name, err))
	}
	logger.Info("repairing unhealthy node: deleting its nodeclaim", "since", since, "replacements", replacements)
	c.recorder.Eventf(node, nil, corev1.EventTypeWarning, disruption.EventDisruptionTerminating, "Repair",
		"Disrupting Node: Unhealthy (%s=%s for more than %s)", policy.ConditionType, policy.ConditionStatus, policy.TolerationDuration)
	disruption.RecordDisrupted("Unhealthy", nc)
	disruption.UnhealthyDisruptedTotal.WithLabelValues(string(policy.ConditionType), nc.Labels[karpv1.NodePoolLabelKey], nc.Labels[karpv1.CapacityTypeLabelKey]).Inc()
	return reconcile.Result{}, nil
}

// withinThreshold reports whether the unhealthy nodes of nodePool (of the cluster when "")
// are at most UnhealthyThreshold of its nodes, rounded up.
func (c *Controller) withinThreshold(ctx context.Context, nodePool string) (bool, int, int, error) {
	var nodes corev1.NodeList
	var opts []client.ListOption
	if nodePool != "" {
		opts = append(opts, client.MatchingLabels{karpv1.NodePoolLabelKey: nodePool})
	}
	if err := c.client.List(ctx, &nodes, opts...); err != nil {
		return false, 0, 0, fmt.Errorf("listing nodes: %w", err)
	}
	bad := 0
	for i := range nodes.Items {
		if _, _, u := unhealthy(&nodes.Items[i], c.policies); u {
			bad++
		}
	}
	total := len(nodes.Items)
	return Allowed(bad, total), bad, total, nil
}

// Allowed reports whether unhealthy of total nodes is within UnhealthyThreshold (rounded up).
func Allowed(unhealthy, total int) bool {
	return unhealthy <= int(math.Ceil(float64(total)*UnhealthyThreshold))
}

// SetupWithManager registers the controller on Nodes (the provider-ID indexes must be
// registered).
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named(Name).For(&corev1.Node{}).Complete(c)
}
