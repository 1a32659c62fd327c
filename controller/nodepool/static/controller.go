// Package static is the nodepool.static controller: it keeps a static NodePool (one with
// spec.replicas) at exactly that many NodeClaims, whatever the pending pods, under the
// StaticCapacity feature gate. It adds NodeClaims built from the NodePool's template as the
// provisioner builds its own (solver.StaticNodeClaim), within limits.nodes, and removes the
// surplus, emptiest first, by deleting NodeClaims: the normal graceful termination drains them.
package static

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/controller/disruption"
	"github.com/joinery-dev/joinery/simulation/solver"
)

// Name is the controller's name in logs, metrics and events.
const Name = "nodepool.static"

// Event reasons.
const (
	// ReasonGateDisabled warns that a NodePool has replicas while StaticCapacity is off.
	ReasonGateDisabled = "StaticCapacityDisabled"
	// ReasonLimited says limits.nodes keeps the NodePool below its replicas.
	ReasonLimited = "StaticCapacityLimited"
	// ReasonLaunchFailed says a NodeClaim for the replicas could not be built or created.
	ReasonLaunchFailed = "StaticCapacityFailed"
)

// resourceNodes is the one limit a static NodePool may have.
const resourceNodes corev1.ResourceName = "nodes"

// Options configure the controller.
type Options struct {
	// Enabled is the StaticCapacity feature gate. Off, a NodePool's replicas are not acted on
	// and a Warning event says so; the provisioner and consolidation still leave the NodePool
	// alone (spec.replicas makes a NodePool static whatever the gate).
	Enabled bool
	// Solver carries the provisioner's MinValuesPolicy and MaxInstanceTypes for the NodeClaims
	// the controller builds.
	Solver solver.Options
}

// Controller reconciles static NodePools.
type Controller struct {
	client        client.Client
	instanceTypes cloudprovider.InstanceTypeLister
	recorder      events.EventRecorder
	opts          Options

	// mu guards expected: per NodePool, the NodeClaims this controller created or deleted
	// that the cache does not show yet. Until it does, the count read from the cache is stale
	// and the NodePool is not acted on, so no NodeClaim is created or deleted twice.
	mu       sync.Mutex
	expected map[string]map[string]expectation
}

// expectedWait is how soon a NodePool is looked at again while the cache catches up.
const expectedWait = time.Second

// New returns the controller.
func New(c client.Client, its cloudprovider.InstanceTypeLister, recorder events.EventRecorder, opts Options) *Controller {
	return &Controller{client: c, instanceTypes: its, recorder: recorder, opts: opts, expected: map[string]map[string]expectation{}}
}

// SetupWithManager registers the controller: a NodePool is reconciled when it changes (its
// status too: it becomes ready) and when one of its NodeClaims changes.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&karpv1.NodePool{}).
		Watches(&karpv1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(nodePoolOf)).
		Complete(c)
}

func nodePoolOf(_ context.Context, obj client.Object) []reconcile.Request {
	if name := obj.GetLabels()[karpv1.NodePoolLabelKey]; name != "" {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: name}}}
	}
	return nil
}

// Reconcile brings one static NodePool to its replicas.
func (c *Controller) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	np := &karpv1.NodePool{}
	if err := c.client.Get(ctx, req.NamespacedName, np); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if np.Spec.Replicas == nil || np.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	if !c.opts.Enabled {
		c.recorder.Eventf(np, nil, corev1.EventTypeWarning, ReasonGateDisabled, "Provision",
			"spec.replicas is not acted on: the StaticCapacity feature gate is off; no NodeClaim is added to or removed from this static NodePool")
		return ctrl.Result{}, nil
	}
	if !meta.IsStatusConditionTrue(np.Status.Conditions, "Ready") || np.Annotations[karpv1.NodePoolHashAnnotationKey] == "" {
		// Reconciled again when it becomes ready and nodepool.status has hashed its template,
		// so every NodeClaim carries the hash drift compares.
		return ctrl.Result{}, nil
	}
	list := &karpv1.NodeClaimList{}
	if err := c.client.List(ctx, list, client.MatchingLabels{karpv1.NodePoolLabelKey: np.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing nodeclaims of nodepool %q: %w", np.Name, err)
	}
	if c.waiting(np.Name, list.Items) {
		return ctrl.Result{RequeueAfter: expectedWait}, nil
	}
	active := replicasOf(list.Items)
	want := int(*np.Spec.Replicas)
	switch {
	case len(active) < want:
		return ctrl.Result{}, c.scaleUp(ctx, np, want-len(active), len(list.Items))
	case len(active) > want:
		return ctrl.Result{}, c.scaleDown(ctx, np, active, len(active)-want)
	}
	return ctrl.Result{}, nil
}

// replicasOf returns the NodeClaims that are the NodePool's replicas: those not being
// deleted, except that while a disruption command replaces a candidate, the candidate counts
// and its replacement does not (the queue marks the candidate before it creates the
// replacement, so counting the replacement instead would add a NodeClaim in between).
func replicasOf(items []karpv1.NodeClaim) []*karpv1.NodeClaim {
	replacing := map[string]bool{}
	for i := range items {
		if id := items[i].Annotations[disruption.CommandAnnotationKey]; id != "" && items[i].DeletionTimestamp == nil {
			replacing[id] = true
		}
	}
	var out []*karpv1.NodeClaim
	for i := range items {
		nc := &items[i]
		if nc.DeletionTimestamp != nil || replacing[nc.Annotations[disruption.ReplacementForAnnotationKey]] {
			continue
		}
		out = append(out, nc)
	}
	return out
}

// scaleUp creates n NodeClaims, fewer if limits.nodes (counting every NodeClaim of the
// NodePool, total) leaves less room.
func (c *Controller) scaleUp(ctx context.Context, np *karpv1.NodePool, n, total int) error {
	if limit, ok := np.Spec.Limits[resourceNodes]; ok {
		room := int(limit.Value()) - total
		if room < n {
			c.recorder.Eventf(np, nil, corev1.EventTypeWarning, ReasonLimited, "Provision",
				"limits.nodes (%s) allows %d more NodeClaims of the %d needed for %d replicas", limit.String(), max(room, 0), n, *np.Spec.Replicas)
			n = room
		}
	}
	if n <= 0 {
		return nil
	}
	its, err := c.instanceTypes.GetInstanceTypes(ctx, np)
	if err != nil {
		return fmt.Errorf("instance types of nodepool %q: %w", np.Name, err)
	}
	logger := log.FromContext(ctx)
	var errs []error
	for range n {
		nc, err := solver.StaticNodeClaim(np, its, c.opts.Solver)
		if err != nil {
			c.recorder.Eventf(np, nil, corev1.EventTypeWarning, ReasonLaunchFailed, "Provision", "cannot build a NodeClaim: %v", err)
			return nil // nothing to retry until the NodePool or its catalog changes
		}
		if err := c.client.Create(ctx, nc); err != nil {
			errs = append(errs, fmt.Errorf("creating a nodeclaim of static nodepool %q: %w", np.Name, err))
			continue
		}
		c.expect(np.Name, nc.Name, false)
		logger.Info("created nodeclaim for static nodepool", "nodepool", np.Name, "nodeclaim", nc.Name, "replicas", *np.Spec.Replicas)
	}
	return errors.Join(errs...)
}

// scaleDown deletes n of active: those not launched or not initialized first, then those whose
// nodes run the fewest pods, newest first among equals. Deleting a NodeClaim starts its
// graceful termination (drain, then the instance).
func (c *Controller) scaleDown(ctx context.Context, np *karpv1.NodePool, active []*karpv1.NodeClaim, n int) error {
	pods, err := c.podsByNode(ctx)
	if err != nil {
		return err
	}
	key := func(nc *karpv1.NodeClaim) (int, int) {
		if nc.Status.NodeName == "" || !meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized) {
			return 0, 0
		}
		return 1, pods[nc.Status.NodeName]
	}
	slices.SortStableFunc(active, func(a, b *karpv1.NodeClaim) int {
		ai, ap := key(a)
		bi, bp := key(b)
		return cmp.Or(cmp.Compare(ai, bi), cmp.Compare(ap, bp),
			b.CreationTimestamp.Compare(a.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
	})
	logger := log.FromContext(ctx)
	var errs []error
	for _, nc := range active[:n] {
		if err := c.client.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting nodeclaim %q of static nodepool %q: %w", nc.Name, np.Name, err))
			continue
		}
		c.expect(np.Name, nc.Name, true)
		logger.Info("deleted nodeclaim of static nodepool", "nodepool", np.Name, "nodeclaim", nc.Name, "replicas", *np.Spec.Replicas)
	}
	return errors.Join(errs...)
}

// podsByNode counts, per node, the pods a scale-down would displace: running or pending pods
// not owned by a DaemonSet.
func (c *Controller) podsByNode(ctx context.Context) (map[string]int, error) {
	list := &corev1.PodList{}
	if err := c.client.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	out := map[string]int{}
	for i := range list.Items {
		p := &list.Items[i]
		if p.Spec.NodeName == "" || !disruption.IsReschedulable(p) {
			continue
		}
		out[p.Spec.NodeName]++
	}
	return out, nil
}

// expectation is a NodeClaim create or delete the cache has not shown yet.
type expectation struct {
	deleted bool
	at      time.Time
}

// expectationTTL forgets an expectation the cache never showed (the NodeClaim created and
// removed again in between), so a NodePool is never stuck.
const expectationTTL = 30 * time.Second

// expect records a NodeClaim created (deleted false) or deleted for pool.
func (c *Controller) expect(pool, name string, deleted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.expected[pool] == nil {
		c.expected[pool] = map[string]expectation{}
	}
	c.expected[pool][name] = expectation{deleted: deleted, at: time.Now()}
}

// waiting drops the expectations of pool that seen fulfils (a created NodeClaim listed, a
// deleted one being deleted or gone) or that expired, and reports whether any is left.
func (c *Controller) waiting(pool string, seen []karpv1.NodeClaim) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := c.expected[pool]
	if len(names) == 0 {
		return false
	}
	listed := map[string]*karpv1.NodeClaim{}
	for i := range seen {
		listed[seen[i].Name] = &seen[i]
	}
	for name, e := range names {
		nc, ok := listed[name]
		switch {
		case time.Since(e.at) > expectationTTL,
			!e.deleted && ok,
			e.deleted && (!ok || nc.DeletionTimestamp != nil):
			delete(names, name)
		}
	}
	return len(names) > 0
}
