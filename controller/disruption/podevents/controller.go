// Package podevents is the nodeclaim.podevents controller: it keeps, on each NodeClaim,
// status.lastPodEventTime (when a pod was last bound to or removed from its node) and the
// conditions disruption reads:
//
//   - Empty: True while the node runs no pod that would be rescheduled (only DaemonSet,
//     static or finished pods); absent otherwise.
//   - Consolidatable: True once the NodePool's consolidateAfter has passed since the later
//     of lastPodEventTime and initialization; absent before, and always absent with
//     consolidateAfter: Never.
//
// A pod's binding time is its PodScheduled condition's transition, so a restarted controller
// reading every pod anew does not restart the countdown; a removal (deletion, or the pod
// finishing) is recorded when the controller sees it.
package podevents

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/controller/disruption"
)

// Name is the controller's name in logs and metrics.
const Name = "nodeclaim.podevents"

// Field indexes this controller registers.
const (
	// PodNodeNameField indexes Pods by spec.nodeName.
	PodNodeNameField = "podevents.spec.nodeName"
	// NodeClaimNodeNameField indexes NodeClaims by status.nodeName.
	NodeClaimNodeNameField = "podevents.status.nodeName"
)

// Controller reconciles NodeClaims' pod-event time and Empty/Consolidatable conditions.
type Controller struct {
	client client.Client
	clock  clock.PassiveClock
	// removals is when a pod last left each node, as seen by this process.
	mu       sync.Mutex
	removals map[string]time.Time
}

// New returns the controller; clk is the real clock when nil.
func New(c client.Client, clk clock.PassiveClock) *Controller {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Controller{client: c, clock: clk, removals: map[string]time.Time{}}
}

// Reconcile recomputes one NodeClaim.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &karpv1.NodeClaim{}
	if err := c.client.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if nc.DeletionTimestamp != nil || nc.Status.NodeName == "" {
		return reconcile.Result{}, nil
	}
	var pods corev1.PodList
	if err := c.client.List(ctx, &pods, client.MatchingFields{PodNodeNameField: nc.Status.NodeName}); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing pods of node %s: %w", nc.Status.NodeName, err)
	}
	var np *karpv1.NodePool
	if name := nc.Labels[karpv1.NodePoolLabelKey]; name != "" {
		np = &karpv1.NodePool{}
		if err := c.client.Get(ctx, client.ObjectKey{Name: name}, np); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, fmt.Errorf("getting nodepool %s: %w", name, err)
			}
			np = nil
		}
	}
	c.mu.Lock()
	removed := c.removals[nc.Status.NodeName]
	c.mu.Unlock()

	stored := nc.DeepCopy()
	requeue := Update(nc, np, pods.Items, removed, c.clock.Now())
	if equality.Semantic.DeepEqual(stored.Status, nc.Status) {
		return reconcile.Result{RequeueAfter: requeue}, nil
	}
	if err := c.client.Status().Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching nodeclaim %s status: %w", nc.Name, err))
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

// Update sets nc's lastPodEventTime, Empty and Consolidatable from the pods on its node, the
// last removal seen, its NodePool (nil for none) and now. It returns when Consolidatable may
// next change (0 for never).
func Update(nc *karpv1.NodeClaim, np *karpv1.NodePool, pods []corev1.Pod, removed, now time.Time) time.Duration {
	last := nc.Status.LastPodEventTime.Time
	empty := true
	for i := range pods {
		p := &pods[i]
		if t := boundAt(p); t.After(last) {
			last = t
		}
		if disruption.IsReschedulable(p) {
			empty = false
		}
	}
	if removed.After(last) {
		last = removed
	}
	if !last.IsZero() && last.After(nc.Status.LastPodEventTime.Time) {
		nc.Status.LastPodEventTime = metav1.NewTime(last.UTC().Truncate(time.Second))
	}
	ts := metav1.NewTime(now)
	if empty {
		setTrue(nc, karpv1.ConditionTypeEmpty, "Empty", "node runs no pods that would be rescheduled", ts)
	} else {
		meta.RemoveStatusCondition(&nc.Status.Conditions, karpv1.ConditionTypeEmpty)
	}

	at, ok := disruption.ConsolidatableAt(nc, np)
	if !ok {
		meta.RemoveStatusCondition(&nc.Status.Conditions, karpv1.ConditionTypeConsolidatable)
		return 0
	}
	if now.Before(at) {
		meta.RemoveStatusCondition(&nc.Status.Conditions, karpv1.ConditionTypeConsolidatable)
		return at.Sub(now)
	}
	setTrue(nc, karpv1.ConditionTypeConsolidatable, "Consolidatable", fmt.Sprintf("consolidateAfter (%s) has passed since the last pod event", np.Spec.Disruption.ConsolidateAfter), ts)
	return 0
}

func setTrue(nc *karpv1.NodeClaim, t, reason, message string, now metav1.Time) {
	if c := meta.FindStatusCondition(nc.Status.Conditions, t); c != nil && c.Status == metav1.ConditionTrue {
		return // keep the transition time
	}
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: reason, Message: message, LastTransitionTime: now, ObservedGeneration: nc.Generation})
}

// boundAt is when pod was bound to its node: its PodScheduled condition's transition, else its
// creation (a pod created with spec.nodeName set has no scheduling).
func boundAt(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return p.CreationTimestamp.Time
}

// SetupWithManager registers the indexes and the controller: NodeClaims, their NodePools,
// and pods bound, removed or finished on their nodes.
func (c *Controller) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, PodNodeNameField, func(o client.Object) []string {
		if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing pods by node: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &karpv1.NodeClaim{}, NodeClaimNodeNameField, func(o client.Object) []string {
		if nc, ok := o.(*karpv1.NodeClaim); ok && nc.Status.NodeName != "" {
			return []string{nc.Status.NodeName}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing nodeclaims by node: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&karpv1.NodeClaim{}).
		Watches(&karpv1.NodePool{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			var list karpv1.NodeClaimList
			if err := c.client.List(ctx, &list, client.MatchingLabels{karpv1.NodePoolLabelKey: o.GetName()}); err != nil {
				return nil
			}
			reqs := make([]reconcile.Request, 0, len(list.Items))
			for i := range list.Items {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
			}
			return reqs
		})).
		Watches(&corev1.Pod{}, &podHandler{c: c}).
		Complete(c)
}

// podHandler enqueues the NodeClaim of a pod's node when the pod is bound there, leaves
// (deleted or finished), and records removals.
type podHandler struct{ c *Controller }

func (h *podHandler) enqueue(ctx context.Context, nodeName string, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if nodeName == "" {
		return
	}
	var list karpv1.NodeClaimList
	if err := h.c.client.List(ctx, &list, client.MatchingFields{NodeClaimNodeNameField: nodeName}); err != nil {
		return
	}
	for i := range list.Items {
		q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
}

func (h *podHandler) removed(nodeName string) {
	h.c.mu.Lock()
	h.c.removals[nodeName] = h.c.clock.Now()
	h.c.mu.Unlock()
}

func (h *podHandler) Create(ctx context.Context, e event.TypedCreateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if p, ok := e.Object.(*corev1.Pod); ok {
		h.enqueue(ctx, p.Spec.NodeName, q)
	}
}

func (h *podHandler) Update(ctx context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	old, ok1 := e.ObjectOld.(*corev1.Pod)
	p, ok2 := e.ObjectNew.(*corev1.Pod)
	if !ok1 || !ok2 || p.Spec.NodeName == "" {
		return
	}
	finished := disruption.IsReschedulable(old) && !disruption.IsReschedulable(p)
	if finished {
		h.removed(p.Spec.NodeName)
	}
	if finished || old.Spec.NodeName != p.Spec.NodeName {
		h.enqueue(ctx, p.Spec.NodeName, q)
	}
}

func (h *podHandler) Delete(ctx context.Context, e event.TypedDeleteEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	// controller-runtime unwraps tombstones (DeletedFinalStateUnknown) before this point.
	p, ok := e.Object.(*corev1.Pod)
	if ok && p.Spec.NodeName != "" {
		h.removed(p.Spec.NodeName)
		h.enqueue(ctx, p.Spec.NodeName, q)
	}
}

func (h *podHandler) Generic(context.Context, event.TypedGenericEvent[client.Object], workqueue.TypedRateLimitingInterface[reconcile.Request]) {
}
