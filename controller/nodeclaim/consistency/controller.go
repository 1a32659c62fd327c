// Package consistency checks an initialized NodeClaim against its Node and records the result
// in the NodeClaim's ConsistentStateFound condition, as Karpenter does: the Node carries the
// NodeClaim's labels and taints, and reports at least the capacity the NodeClaim promised. A
// failed check is a Warning event (FailedConsistencyCheck); nothing is disrupted for it.
package consistency

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/controller/state"
)

// Name is the controller's name in logs and metrics.
const Name = "nodeclaim.consistency"

// Condition reasons and the event reason, Karpenter's.
const (
	ReasonConsistent        = "ConsistentStateFound"
	ReasonInconsistent      = "ConsistencyCheckFailed"
	EventFailedConsistency  = "FailedConsistencyCheck"
	capacityToleranceFactor = 0.9
)

// capacityResources are the resources whose reported capacity is compared with the NodeClaim's.
var capacityResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods}

// Controller sets ConsistentStateFound on initialized NodeClaims.
type Controller struct {
	client   client.Client
	recorder events.EventRecorder
}

// New returns the controller.
func New(c client.Client, recorder events.EventRecorder) *Controller {
	return &Controller{client: c, recorder: recorder}
}

// Reconcile checks one NodeClaim.
func (c *Controller) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	nc := &karpv1.NodeClaim{}
	if err := c.client.Get(ctx, req.NamespacedName, nc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !nc.DeletionTimestamp.IsZero() || !meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized) {
		return ctrl.Result{}, nil // only a settled node is held to the NodeClaim's promise
	}
	nodes, err := state.NodesForProviderID(ctx, c.client, nc.Status.ProviderID)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(nodes) != 1 {
		return ctrl.Result{}, nil // registration and garbage collection own a missing or duplicate node
	}
	issues := Check(nc, &nodes[0])
	cond := metav1.Condition{Type: karpv1.ConditionTypeConsistentStateFound, Status: metav1.ConditionTrue, Reason: ReasonConsistent, ObservedGeneration: nc.Generation}
	if len(issues) > 0 {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonInconsistent, strings.Join(issues, "; ")
	}
	stored := nc.DeepCopy()
	if !meta.SetStatusCondition(&nc.Status.Conditions, cond) {
		return ctrl.Result{}, nil
	}
	if err := c.client.Status().Patch(ctx, nc, client.MergeFrom(stored)); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("setting %s: %w", karpv1.ConditionTypeConsistentStateFound, err))
	}
	if len(issues) > 0 {
		c.recorder.Eventf(nc, &nodes[0], corev1.EventTypeWarning, EventFailedConsistency, "CheckConsistency", "Consistency check failed: %s", cond.Message)
	}
	return ctrl.Result{}, nil
}

// Check lists how node differs from what nc promised: a label of the NodeClaim missing or
// different on the node, a taint of the NodeClaim missing (startup taints are meant to go), or a
// capacity of cpu, memory or pods below 90% of the NodeClaim's.
func Check(nc *karpv1.NodeClaim, node *corev1.Node) []string {
	var issues []string
	for _, k := range sortedKeys(nc.Labels) {
		if got, ok := node.Labels[k]; !ok || got != nc.Labels[k] {
			issues = append(issues, fmt.Sprintf("label %s=%s is %q on node %s", k, nc.Labels[k], got, node.Name))
		}
	}
	for _, t := range nc.Spec.Taints {
		if !slices.ContainsFunc(node.Spec.Taints, func(have corev1.Taint) bool { return have.MatchTaint(&t) && have.Value == t.Value }) {
			issues = append(issues, fmt.Sprintf("taint %s missing on node %s", t.ToString(), node.Name))
		}
	}
	for _, r := range capacityResources {
		want, ok := nc.Status.Capacity[r]
		if !ok || want.IsZero() {
			continue
		}
		got := node.Status.Capacity[r]
		if got.AsApproximateFloat64() < capacityToleranceFactor*want.AsApproximateFloat64() {
			issues = append(issues, fmt.Sprintf("expected %s of resource %s, but found %s (%.1f%% of expected)", want.String(), r, got.String(), 100*got.AsApproximateFloat64()/want.AsApproximateFloat64()))
		}
	}
	return issues
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// SetupWithManager reconciles a NodeClaim when it changes and when its Node does.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&karpv1.NodeClaim{}).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(c.nodeClaimsOfNode)).
		Complete(c)
}

func (c *Controller) nodeClaimsOfNode(ctx context.Context, obj client.Object) []reconcile.Request {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return nil
	}
	claims, err := state.NodeClaimsForProviderID(ctx, c.client, node.Spec.ProviderID)
	if err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(claims))
	for _, nc := range claims {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&nc)})
	}
	return out
}
