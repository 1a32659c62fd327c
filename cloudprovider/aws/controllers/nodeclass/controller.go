// Package nodeclass is the EC2NodeClass controller: it resolves a class's subnets, security
// groups, AMIs, capacity reservations, placement group and instance profile into its status,
// sets the SubnetsReady, SecurityGroupsReady, AMIsReady, InstanceProfileReady,
// CapacityReservationsReady, PlacementGroupReady (with a selector), ValidationSucceeded and
// Ready conditions, stamps the
// karpenter.k8s.aws/ec2nodeclass-hash annotations for drift, re-resolves periodically, and holds
// the karpenter.k8s.aws/termination finalizer so that a class is not deleted while NodeClaims
// still use it (then deletes the instance profile it manages).
package nodeclass

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	"github.com/joinery-dev/joinery/cloudprovider/aws/nodeclass"
)

// Name is the controller's name in logs and metrics.
const Name = "ec2nodeclass"

// TerminationFinalizer keeps an EC2NodeClass until no NodeClaim uses it and its managed
// instance profile is deleted.
const TerminationFinalizer = awsv1.Group + "/termination"

// Resolver looks a class's parts up in AWS; *nodeclass.Resolver is the real one.
type Resolver interface {
	Subnets(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.Subnet, error)
	SecurityGroups(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.SecurityGroup, error)
	AMIs(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.AMI, error)
	CapacityReservations(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.CapacityReservation, error)
	PlacementGroups(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.PlacementGroup, error)
	InstanceProfile(ctx context.Context, nc *awsv1.EC2NodeClass) (string, error)
	DeleteInstanceProfile(ctx context.Context, nc *awsv1.EC2NodeClass) error
}

// Options tune how often classes are re-resolved.
type Options struct {
	// ResyncInterval is how often a ready class is resolved again, to follow changes in AWS
	// (new AMI releases, subnets filling up); 5 minutes if zero.
	ResyncInterval time.Duration
	// NotReadyInterval is how soon a class that failed for a lasting reason (nothing matched,
	// a missing role, a missing permission) is tried again; 1 minute if zero.
	NotReadyInterval time.Duration
	// RetryInterval is how soon a class is tried again after throttling or a transient AWS
	// error; 15 seconds if zero.
	RetryInterval time.Duration
	// DeletionPollInterval is how often a deleting class checks for NodeClaims still using it,
	// besides reacting to their deletion; 10 seconds if zero.
	DeletionPollInterval time.Duration
	// OnDelete, when set, cleans up what else joinery made for a deleting class (its launch
	// templates) once no NodeClaim uses it, before the instance profile goes. An error keeps
	// the finalizer and is retried.
	OnDelete func(ctx context.Context, nc *awsv1.EC2NodeClass) error
}

func (o *Options) defaults() {
	if o.ResyncInterval == 0 {
		o.ResyncInterval = 5 * time.Minute
	}
	if o.NotReadyInterval == 0 {
		o.NotReadyInterval = time.Minute
	}
	if o.RetryInterval == 0 {
		o.RetryInterval = 15 * time.Second
	}
	if o.DeletionPollInterval == 0 {
		o.DeletionPollInterval = 10 * time.Second
	}
}

// Controller reconciles EC2NodeClasses.
type Controller struct {
	client   client.Client
	resolver Resolver
	recorder events.EventRecorder
	clock    clock.PassiveClock
	opts     Options
}

// New returns a Controller. clk stamps condition transitions; the real clock if nil.
func New(c client.Client, resolver Resolver, recorder events.EventRecorder, clk clock.PassiveClock, opts Options) *Controller {
	if clk == nil {
		clk = clock.RealClock{}
	}
	opts.defaults()
	return &Controller{client: c, resolver: resolver, recorder: recorder, clock: clk, opts: opts}
}

// Reconcile resolves one class and writes its finalizer, hash annotations and status, each
// only when it changed.
func (c *Controller) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	nc := &awsv1.EC2NodeClass{}
	if err := c.client.Get(ctx, req.NamespacedName, nc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ctx = logr.NewContext(ctx, log.FromContext(ctx).WithValues("ec2nodeclass", nc.Name))
	if !nc.DeletionTimestamp.IsZero() {
		return c.finalize(ctx, nc)
	}
	if err := c.updateMetadata(ctx, nc); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: c.opts.RetryInterval}, nil
		}
		return ctrl.Result{}, err
	}

	stored := nc.DeepCopy()
	outcomes := c.resolve(ctx, nc)
	now := metav1.NewTime(c.clock.Now())
	for _, o := range outcomes {
		c.record(nc, stored, o, now)
	}
	setValidationSucceeded(nc, validate(nc), now)
	setReady(nc, now)

	if !equality.Semantic.DeepEqual(stored.Status, nc.Status) {
		// Optimistic locking: a status computed from a stale read fails and is recomputed.
		if err := c.client.Status().Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) {
				return ctrl.Result{RequeueAfter: c.opts.RetryInterval}, nil // the class changed meanwhile; resolve it again
			}
			return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("patching ec2nodeclass %s status: %w", nc.Name, err))
		}
	}
	return ctrl.Result{RequeueAfter: c.requeueAfter(outcomes)}, nil
}

// outcome is the result of resolving one part of a class.
type outcome struct {
	part part
	err  error
}

// resolve looks every part up, each independently so one failure does not hide the others,
// and writes what resolved into nc's status.
func (c *Controller) resolve(ctx context.Context, nc *awsv1.EC2NodeClass) []outcome {
	var outcomes []outcome
	run := func(p part, fn func() error) { outcomes = append(outcomes, outcome{part: p, err: fn()}) }
	run(partSubnets, func() error {
		v, err := c.resolver.Subnets(ctx, nc)
		if err == nil || !nodeclass.Classify(err).Retryable() {
			nc.Status.Subnets = v
		}
		return err
	})
	run(partSecurityGroups, func() error {
		v, err := c.resolver.SecurityGroups(ctx, nc)
		if err == nil || !nodeclass.Classify(err).Retryable() {
			nc.Status.SecurityGroups = v
		}
		return err
	})
	run(partAMIs, func() error {
		v, err := c.resolver.AMIs(ctx, nc)
		if err == nil || !nodeclass.Classify(err).Retryable() {
			nc.Status.AMIs = v
		}
		return err
	})
	run(partCapacityReservations, func() error {
		v, err := c.resolver.CapacityReservations(ctx, nc)
		if err == nil || !nodeclass.Classify(err).Retryable() {
			nc.Status.CapacityReservations = v
		}
		return err
	})
	if nc.Spec.PlacementGroupSelector == nil {
		// Without a selector there is nothing to be ready: the condition goes, as in Karpenter.
		nc.Status.PlacementGroups = nil
		meta.RemoveStatusCondition(&nc.Status.Conditions, awsv1.ConditionTypePlacementGroupReady)
	} else {
		run(partPlacementGroup, func() error {
			v, err := c.resolver.PlacementGroups(ctx, nc)
			if err == nil || !nodeclass.Classify(err).Retryable() {
				nc.Status.PlacementGroups = v
			}
			return err
		})
	}
	run(partInstanceProfile, func() error {
		v, err := c.resolver.InstanceProfile(ctx, nc)
		if err == nil || !nodeclass.Classify(err).Retryable() {
			nc.Status.InstanceProfile = v
		}
		return err
	})
	return outcomes
}

// record sets a part's condition from its outcome and reports a new failure as an event.
func (c *Controller) record(nc, stored *awsv1.EC2NodeClass, o outcome, now metav1.Time) {
	if o.err == nil {
		setCondition(nc, o.part.condition, metav1.ConditionTrue, o.part.condition, "", now)
		return
	}
	class := nodeclass.Classify(o.err)
	previous := meta.FindStatusCondition(stored.Status.Conditions, o.part.condition)
	message := nodeclass.Message(o.err)
	// A transient failure keeps a part that resolved before: its last good answer still holds.
	if class.Retryable() && previous != nil && previous.Status == metav1.ConditionTrue {
		c.recorder.Eventf(nc, nil, corev1.EventTypeWarning, o.part.failedReason(class), "Resolve", "Keeping the last resolved %s: %s", o.part.noun, message)
		return
	}
	reason := o.part.failedReason(class)
	setCondition(nc, o.part.condition, metav1.ConditionFalse, reason, message, now)
	if previous == nil || previous.Status != metav1.ConditionFalse || previous.Reason != reason || previous.Message != message {
		c.recorder.Eventf(nc, nil, corev1.EventTypeWarning, reason, "Resolve", "Resolving %s failed: %s", o.part.noun, message)
	}
}

// requeueAfter picks the soonest retry the outcomes call for.
func (c *Controller) requeueAfter(outcomes []outcome) time.Duration {
	after := c.opts.ResyncInterval
	for _, o := range outcomes {
		if o.err == nil {
			continue
		}
		wait := c.opts.NotReadyInterval
		if nodeclass.Classify(o.err).Retryable() {
			wait = c.opts.RetryInterval
		}
		after = min(after, wait)
	}
	return after
}
