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

// Default refresh intervals: how often a part that resolved is resolved again.
const (
	DefaultAMIRefreshInterval    = 5 * time.Minute
	DefaultSubnetRefreshInterval = 5 * time.Minute
	DefaultResyncInterval        = 5 * time.Minute
)

// Options tune how often classes are re-resolved and how they are validated.
type Options struct {
	// AMIRefreshInterval is how often a class's AMIs are resolved again, to follow new
	// releases under an alias and deprecations (AMI_REFRESH_INTERVAL);
	// DefaultAMIRefreshInterval if zero.
	AMIRefreshInterval time.Duration
	// SubnetRefreshInterval is how often its subnets (their free addresses order the launch
	// subnets) and security groups are resolved again (SUBNET_REFRESH_INTERVAL);
	// DefaultSubnetRefreshInterval if zero.
	SubnetRefreshInterval time.Duration
	// ResyncInterval is how often the other parts (capacity reservations, the instance
	// profile) are resolved again; DefaultResyncInterval if zero.
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
	// DryRun, when set, is the validation's proof that the controller may launch with a
	// resolved class (nodeclass.DryRun.Check: EC2 dry-runs of the launch calls); a
	// *nodeclass.DryRunDeniedError makes ValidationSucceeded False with its reason.
	DryRun func(ctx context.Context, nc *awsv1.EC2NodeClass) error
	// DisableDryRun skips DryRun (DISABLE_DRY_RUN): ValidationSucceeded is True with the
	// reason DryRunDisabled once the other checks pass.
	DisableDryRun bool
	// OnDelete, when set, cleans up what else joinery made for a deleting class (its launch
	// templates) once no NodeClaim uses it, before the instance profile goes. An error keeps
	// the finalizer and is retried.
	OnDelete func(ctx context.Context, nc *awsv1.EC2NodeClass) error
}

func (o *Options) defaults() {
	if o.AMIRefreshInterval == 0 {
		o.AMIRefreshInterval = DefaultAMIRefreshInterval
	}
	if o.SubnetRefreshInterval == 0 {
		o.SubnetRefreshInterval = DefaultSubnetRefreshInterval
	}
	if o.ResyncInterval == 0 {
		o.ResyncInterval = DefaultResyncInterval
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
	// schedules says when each class's parts last resolved (refresh.go), by class name.
	schedules *schedules
}

// New returns a Controller. clk stamps condition transitions; the real clock if nil.
func New(c client.Client, resolver Resolver, recorder events.EventRecorder, clk clock.PassiveClock, opts Options) *Controller {
	if clk == nil {
		clk = clock.RealClock{}
	}
	opts.defaults()
	return &Controller{client: c, resolver: resolver, recorder: recorder, clock: clk, opts: opts, schedules: newSchedules()}
}

// Reconcile resolves the parts of one class that are due (refresh.go) and writes its
// finalizer, hash annotations and status, each only when it changed.
func (c *Controller) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	nc := &awsv1.EC2NodeClass{}
	if err := c.client.Get(ctx, req.NamespacedName, nc); err != nil {
		if apierrors.IsNotFound(err) {
			c.schedules.forget(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ctx = logr.NewContext(ctx, log.FromContext(ctx).WithValues("ec2nodeclass", nc.Name))
	if !nc.DeletionTimestamp.IsZero() {
		c.schedules.forget(nc.Name)
		return c.finalize(ctx, nc)
	}
	if err := c.updateMetadata(ctx, nc); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: c.opts.RetryInterval}, nil
		}
		return ctrl.Result{}, err
	}

	stored := nc.DeepCopy()
	now := c.clock.Now()
	sched := c.schedules.next(nc)
	outcomes := c.resolve(ctx, nc, func(p part) bool { return sched.due(p, c.interval(p), now) })
	stamp := metav1.NewTime(now)
	for _, o := range outcomes {
		c.record(nc, stored, o, stamp)
		sched.resolvedAt(o.part, o.err == nil, now)
	}
	if err := c.validation(ctx, nc, stored, sched, stamp); err != nil {
		outcomes = append(outcomes, outcome{part: partValidation, err: err})
	}
	setReady(nc, stamp)

	if !equality.Semantic.DeepEqual(stored.Status, nc.Status) {
		// Optimistic locking: a status computed from a stale read fails and is recomputed.
		if err := c.client.Status().Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) {
				return ctrl.Result{RequeueAfter: c.opts.RetryInterval}, nil // the class changed meanwhile; resolve it again
			}
			return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("patching ec2nodeclass %s status: %w", nc.Name, err))
		}
	}
	// Only a written status counts as resolved: otherwise the parts are due again.
	c.schedules.commit(nc.Name, sched)
	return ctrl.Result{RequeueAfter: c.requeueAfter(outcomes, sched, now)}, nil
}

// outcome is the result of resolving one part of a class.
type outcome struct {
	part part
	err  error
}

// resolve looks up every part due says is due, each independently so one failure does not
// hide the others, and writes what resolved into nc's status.
func (c *Controller) resolve(ctx context.Context, nc *awsv1.EC2NodeClass, due func(part) bool) []outcome {
	var outcomes []outcome
	run := func(p part, fn func() error) {
		if due(p) {
			outcomes = append(outcomes, outcome{part: p, err: fn()})
		}
	}
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

// requeueAfter picks the soonest of the retries the outcomes call for and the next part's
// refresh.
func (c *Controller) requeueAfter(outcomes []outcome, sched *schedule, now time.Time) time.Duration {
	after, ok := sched.nextRefresh(c.interval, now)
	if !ok {
		after = c.opts.ResyncInterval // every part failed: their retries decide
	}
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
