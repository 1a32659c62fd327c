// Package lifecycle is the nodeclaim.lifecycle controller: it takes a NodeClaim from launch
// (cloudprovider.Create) through registration (linking the Node with its provider ID) to
// initialization (Node Ready, startup taints gone, requested resources present), recording each
// step as a status condition with an event, and deletes NodeClaims whose capacity is unavailable
// or whose node never registers. Deleting is left to the termination controller's finalizer.
package lifecycle

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
)

// Name is the controller's name in logs and metrics, as in Karpenter's logs.
const Name = "nodeclaim.lifecycle"

// DefaultRegistrationTTL is how long after its creation a NodeClaim may wait for its Node to
// register (Karpenter's liveness TTL).
const DefaultRegistrationTTL = 15 * time.Minute

// SuggestedInitializationTTL is a value for the opt-in initialization TTL (the flag's help
// names it). The TTL is off by default: Karpenter keeps a node that is slow to initialize (GPU
// device plugins, CNI startup taints) rather than delete it.
const SuggestedInitializationTTL = 15 * time.Minute

// OfferingRecorder records offerings that answered with insufficient capacity.
type OfferingRecorder interface {
	MarkUnavailable(ctx context.Context, ttl time.Duration, offerings ...cloudprovider.OfferingKey) error
}

// Controller reconciles NodeClaims through launch, registration and initialization.
type Controller struct {
	client            client.Client
	live              client.Reader // the API server, uncached (nil: the client alone)
	cloudProvider     cloudprovider.CloudProvider
	unavailable       OfferingRecorder
	recorder          events.EventRecorder
	clock             clock.PassiveClock
	registrationTTL   time.Duration
	initializationTTL time.Duration
}

// Options configure a Controller; zero values take the defaults.
type Options struct {
	// RegistrationTTL is how long after creation a NodeClaim's Node must register before the
	// NodeClaim is deleted; DefaultRegistrationTTL if zero.
	RegistrationTTL time.Duration
	// InitializationTTL is how long after registering a Node must initialize before the
	// NodeClaim is deleted; zero keeps it however long it takes (Karpenter's behaviour).
	InitializationTTL time.Duration
	// LiveReader reads from the API server, bypassing the cache (the manager's APIReader): a
	// NodeClaim the cache shows not launched is read again through it before its instance is
	// created. Nil reads the client only.
	LiveReader client.Reader
	// Clock is the time source; the real clock if nil.
	Clock clock.PassiveClock
}

// New returns a Controller. unavailable receives offerings that answered with insufficient
// capacity.
func New(c client.Client, cp cloudprovider.CloudProvider, unavailable OfferingRecorder, recorder events.EventRecorder, opts Options) *Controller {
	if opts.RegistrationTTL == 0 {
		opts.RegistrationTTL = DefaultRegistrationTTL
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Controller{
		client:            c,
		live:              opts.LiveReader,
		cloudProvider:     cp,
		unavailable:       unavailable,
		recorder:          recorder,
		clock:             opts.Clock,
		registrationTTL:   opts.RegistrationTTL,
		initializationTTL: opts.InitializationTTL,
	}
}

// stepResult says whether the next lifecycle step may run and when to look again.
type stepResult struct {
	stop         bool
	requeueAfter time.Duration
	// deleted means the step deleted the NodeClaim: nothing more is written.
	deleted bool
}

// Reconcile advances one NodeClaim as far as it can go now. Every step reads what the previous
// attempts left (status, the Node's labels) so that a restart anywhere repeats no side effect
// except an idempotent cloudprovider.Create.
func (c *Controller) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	nc := &karpv1.NodeClaim{}
	if err := c.client.Get(ctx, req.NamespacedName, nc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if nc.Status.ProviderID == "" && c.live != nil {
		// persist writes metadata, then status: the reconcile the first write's event queues
		// often reads the cache before the second, launched again (the instance is found, not
		// made twice) and had its status write refused as stale. In a burst of 150 NodeClaims,
		// each was launched two to seven times, seconds apart, before its node could register.
		if err := c.live.Get(ctx, req.NamespacedName, nc); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}
	if !nc.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // the termination controller owns it now
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("NodeClaim", klogRef(nc), "NodePool", map[string]string{"name": nc.Labels[karpv1.NodePoolLabelKey]}))

	// The finalizer goes on before anything is launched, so no instance can outlive a NodeClaim
	// deleted mid-launch.
	if nc.Status.ProviderID == "" && !controllerutil.ContainsFinalizer(nc, karpv1.TerminationFinalizer) {
		stored := nc.DeepCopy()
		controllerutil.AddFinalizer(nc, karpv1.TerminationFinalizer)
		if err := c.client.Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding finalizer: %w", err)
		}
	}

	stored := nc.DeepCopy()
	conds := conditionSetter{nodeClaim: nc, now: metav1.NewTime(c.clock.Now())}
	conds.initialize()

	result, stepErr := c.runSteps(ctx, nc, conds)
	if result.deleted {
		return ctrl.Result{}, stepErr
	}
	conds.summarizeReady()
	if err := c.persist(ctx, stored, nc); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	c.emitTransitions(nc, transitions(stored.Status.Conditions, nc.Status.Conditions))
	if stepErr != nil {
		return ctrl.Result{}, stepErr // retried with the controller's exponential backoff
	}
	return ctrl.Result{RequeueAfter: result.requeueAfter}, nil
}

// runSteps runs launch, registration and initialization in order, stopping at the first that
// cannot complete yet.
func (c *Controller) runSteps(ctx context.Context, nc *karpv1.NodeClaim, conds conditionSetter) (stepResult, error) {
	result, err := c.launch(ctx, nc, conds)
	if err != nil || result.stop || result.deleted {
		return result, err
	}
	node, result, err := c.register(ctx, nc, conds)
	if err != nil || result.stop || result.deleted {
		return result, err
	}
	return c.initialize(ctx, nc, node, conds)
}

// persist writes metadata (labels, annotations) before status: a NodeClaim whose status says
// launched must already carry the launch's labels, because a launched NodeClaim is never
// launched again to recover them.
func (c *Controller) persist(ctx context.Context, stored, nc *karpv1.NodeClaim) error {
	desired := nc.Status.DeepCopy()
	if !equality.Semantic.DeepEqual(stored.Labels, nc.Labels) || !equality.Semantic.DeepEqual(stored.Annotations, nc.Annotations) {
		if err := c.client.Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("patching nodeclaim metadata: %w", err)
		}
	}
	if equality.Semantic.DeepEqual(stored.Status, *desired) {
		return nil
	}
	// The patch is the difference from the status we read, sent with the latest resourceVersion
	// so that a concurrent status change fails it instead of being overwritten.
	base := nc.DeepCopy()
	base.Status = *stored.Status.DeepCopy()
	nc.Status = *desired
	if err := c.client.Status().Patch(ctx, nc, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patching nodeclaim status: %w", err)
	}
	return nil
}

// emitTransitions records one event per condition status change, worded as in Karpenter.
func (c *Controller) emitTransitions(nc *karpv1.NodeClaim, changes []transition) {
	for _, t := range changes {
		eventType := corev1.EventTypeNormal
		if t.to == string(metav1.ConditionFalse) {
			eventType = corev1.EventTypeWarning
		}
		c.recorder.Eventf(nc, nil, eventType, t.condType, "StatusConditionTransition",
			"Status condition transitioned, Type: %s, Status: %s -> %s, Reason: %s", t.condType, t.from, t.to, t.reason)
	}
}

// deleteNodeClaim deletes nc; its finalizer then terminates whatever was launched.
func (c *Controller) deleteNodeClaim(ctx context.Context, nc *karpv1.NodeClaim) error {
	if err := c.client.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting nodeclaim: %w", err)
	}
	return nil
}

func klogRef(nc *karpv1.NodeClaim) map[string]string { return map[string]string{"name": nc.Name} }
