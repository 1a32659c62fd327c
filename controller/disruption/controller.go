// Package disruption is the disruption controller: one loop that runs the automated graceful
// methods in order (GracefulMethods: Drift, Emptiness, multi-node and then single-node
// consolidation), each returning a command — candidates and the replacements they need — that
// the budgets allow and the simulation accepts; the command is validated again after a short
// delay and executed through one orchestration queue (Queue), and the loop starts again from
// the first method.
//
// Forceful methods live beside it: expiration (subpackage expiration) and node repair
// (subpackage repair); the conditions they and the methods read (lastPodEventTime,
// Consolidatable, Empty) are kept by subpackage podevents. Budgets are subpackage budget.
package disruption

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
)

// Name is the controller's name in logs.
const Name = "disruption"

// Defaults of Options.
const (
	DefaultPollInterval    = 10 * time.Second
	DefaultValidationDelay = 5 * time.Second
	// DefaultConsolidationValidationDelay is Karpenter's: long enough for pods that were
	// about to bind to a candidate, or a scale-up in progress, to show.
	DefaultConsolidationValidationDelay = 15 * time.Second
	DefaultReplacementTimeout           = 10 * time.Minute
	DefaultReplacementPoll              = 2 * time.Second
)

// Options tune the loop.
type Options struct {
	// PollInterval is the time between passes when nothing was done.
	PollInterval time.Duration
	// ValidationDelay is how long a command waits before it is checked again against the
	// cluster and executed.
	ValidationDelay time.Duration
	// ConsolidationValidationDelay replaces ValidationDelay for the consolidation methods
	// (emptiness, multi- and single-node).
	ConsolidationValidationDelay time.Duration
	// ReplacementTimeout bounds the wait for replacements to initialize.
	ReplacementTimeout time.Duration
	// ReplacementPoll is how often a waiting command looks at its replacements.
	ReplacementPoll time.Duration
	// Buffers, when set (gate CapacityBuffer), keep room for CapacityBuffers' virtual pods.
	Buffers *Buffers
	// Volatile, when set, re-checks volatile pod requests before a command executes
	// (volatile.go).
	Volatile VolatileVerifier
	// InstanceTypes, when set, prices each pass's command for the savings gauge
	// (joinery_nodepool_consolidation_savings_per_hour).
	InstanceTypes cloudprovider.InstanceTypeLister
	// Zones, when set, suspends voluntary disruption of the nodes in zones the cloud provider
	// says are impaired (the AWS provider with ENABLE_ZONAL_SHIFT).
	Zones ZoneSuspender
}

// ZoneSuspender is a cloud provider that can suspend voluntary disruption in a zone, as
// Karpenter does while an ARC zonal shift moves the cluster away from it: drift and
// consolidation there would only churn capacity in or out of an impaired zone.
type ZoneSuspender interface {
	// DisruptionSuspended returns why voluntary disruption of node is suspended, naming the
	// zone and what holds it, or "" when it is not.
	DisruptionSuspended(node *corev1.Node) string
}

func (o *Options) defaults() {
	if o.PollInterval == 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.ValidationDelay == 0 {
		o.ValidationDelay = DefaultValidationDelay
	}
	if o.ConsolidationValidationDelay == 0 {
		o.ConsolidationValidationDelay = DefaultConsolidationValidationDelay
	}
	if o.ReplacementTimeout == 0 {
		o.ReplacementTimeout = DefaultReplacementTimeout
	}
	if o.ReplacementPoll == 0 {
		o.ReplacementPoll = DefaultReplacementPoll
	}
}

// Controller is the disruption loop, a manager Runnable that runs on the leader only.
type Controller struct {
	client  client.Client
	methods []Method
	queue   *Queue
	pub     *publisher
	clock   clock.Clock
	opts    Options

	// waiting are the commands chosen and not yet executed or dropped, in the order chosen:
	// a pass that found several waits one validation delay for all of them, and a command
	// its budget does not allow yet waits here for a later pass (at most maxBudgetWait).
	waiting []*waitingCommand
	// started are the candidates of commands this loop started, by NodeClaim name, until the
	// cache shows them chosen or gone: budgets count them meanwhile (load).
	started map[string]time.Time
	// arrivals are the existing nodes the pods of commands this loop started were simulated
	// onto, by node name, until when they are no candidates (Cluster.arriving): the evicted
	// pods land there within moments, each restarting the node's consolidateAfter, so a
	// command chosen for such a node meanwhile would only be refused at its validation, a
	// validation delay in which the pass could have chosen another node.
	arrivals map[string]time.Time
	// soon says the last pass left something for a pass a second later (a command waiting
	// for its budget, or candidates whose budget frees when nodes being deleted are gone).
	soon bool
	// budgetWait, when set, holds passes back from the methods until a node being deleted is
	// gone: the candidates were blocked only by those nodes' budget.
	budgetWait *budgetWait
	// wake ends the wait between passes early when a NodeClaim change may have freed a budget
	// or made a candidate (NodeClaimChanged).
	wake chan struct{}
}

// New returns the loop over methods (in order). c reads from the cache and writes; reader
// reads from the API server (the manager's API reader).
func New(c client.Client, reader client.Reader, recorder events.EventRecorder, clk clock.Clock, methods []Method, opts Options) *Controller {
	opts.defaults()
	if clk == nil {
		clk = clock.RealClock{}
	}
	pub := newPublisher(recorder, clk.Now)
	return &Controller{
		client:   c,
		methods:  methods,
		queue:    NewQueue(c, reader, pub, clk, opts.ReplacementTimeout, opts.ReplacementPoll, log.Log.WithName(Name)),
		pub:      pub,
		clock:    clk,
		opts:     opts,
		started:  map[string]time.Time{},
		arrivals: map[string]time.Time{},
		wake:     make(chan struct{}, 1),
	}
}

// NodeClaimChanged is told of every NodeClaim change the manager's cache sees (old nil when
// it is new, nc nil when it is gone). A command's step (NodeClaimChanged of Queue), a budget
// freed — a node being disrupted gone, its instance terminating, or its command rolled back —
// and a node becoming Consolidatable or Drifted are acted on at once, not at the next poll;
// nothing else wakes the loop.
func (c *Controller) NodeClaimChanged(old, nc *karpv1.NodeClaim) {
	c.queue.NodeClaimChanged(old, nc)
	if freesBudget(old, nc) || becameCandidate(old, nc) {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// becameCandidate reports whether a change from old to nc made it Consolidatable or Drifted:
// a method may act on it now.
func becameCandidate(old, nc *karpv1.NodeClaim) bool {
	if old == nil || nc == nil {
		return false
	}
	for _, t := range []string{karpv1.ConditionTypeConsolidatable, karpv1.ConditionTypeDrifted} {
		if meta.IsStatusConditionTrue(nc.Status.Conditions, t) && !meta.IsStatusConditionTrue(old.Status.Conditions, t) {
			return true
		}
	}
	return false
}

// freesBudget reports whether a change from old to nc gives a budget back.
func freesBudget(old, nc *karpv1.NodeClaim) bool {
	if old == nil || (old.DeletionTimestamp == nil && !isMarked(old)) {
		return false // it held no budget
	}
	switch {
	case nc == nil:
		return true
	case instanceTerminating(nc) && !instanceTerminating(old):
		return true
	default:
		return nc.DeletionTimestamp == nil && !isMarked(nc) // unmarked: its command rolled back
	}
}

// Queue returns the orchestration queue.
func (c *Controller) Queue() *Queue { return c.queue }

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (c *Controller) NeedLeaderElection() bool { return true }

// Start runs the loop until ctx ends: first the commands a previous process left behind are
// recovered, then a pass runs every PollInterval (a second later after a command started,
// and while a command waits for its budget).
func (c *Controller) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName(Name)
	ctx = log.IntoContext(ctx, logger)
	// Commands a previous process left are advanced before the first pass counts budgets;
	// then the queue's passes keep advancing every command until ctx ends.
	if err := c.queue.Recover(ctx); err != nil {
		logger.Error(err, "recovering disruption commands")
	}
	c.queue.RunInBackground(ctx)
	defer c.queue.Wait()
	for {
		started, err := c.Step(ctx)
		if err != nil && ctx.Err() == nil {
			logger.Error(err, "disruption pass")
		}
		wait := c.opts.PollInterval
		if started || c.soon {
			wait = time.Second
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.clock.After(wait):
		case <-c.wake:
		}
	}
}

// recordSavingsOrLog records the pass's savings; a price it cannot read costs the gauge, not
// the pass.
func (c *Controller) recordSavingsOrLog(ctx context.Context, cluster *Cluster, cmd *Command) {
	if err := c.recordSavings(ctx, cluster, cmd); err != nil {
		log.FromContext(ctx).Error(err, "recording the disruption command's savings")
	}
}

// savingsOf is the cost per hour cmd saves over all NodePools, nil when prices are unknown.
func (c *Controller) savingsOf(ctx context.Context, cluster *Cluster, cmd *Command) *float64 {
	if c.opts.InstanceTypes == nil {
		return nil
	}
	saved, err := cmd.Savings(ctx, c.pricer(cluster, cmd))
	if err != nil {
		return nil
	}
	total := 0.0
	for _, v := range saved {
		total += v
	}
	return &total
}

// validationDelay is how long m's commands wait before validation: the delay its contract
// names (Method.Validation).
func (c *Controller) validationDelay(m Method) time.Duration {
	if m.Validation() == ValidateAfterConsolidationDelay {
		return c.opts.ConsolidationValidationDelay
	}
	return c.opts.ValidationDelay
}

// maxLoggedPods bounds the pods listed in a command's log line.
const maxLoggedPods = 20

// logCommand writes the one log line of a command.
func logCommand(logger logr.Logger, cmd *Command) {
	var pods []string
	for _, cand := range cmd.Candidates {
		for _, p := range cand.Pods {
			pods = append(pods, fmt.Sprintf("%s/%s→%s", p.Namespace, p.Name, cmd.Destinations[p.UID]))
		}
	}
	slices.Sort(pods)
	if len(pods) > maxLoggedPods {
		pods = append(pods[:maxLoggedPods], fmt.Sprintf("and %d more", len(pods)-maxLoggedPods))
	}
	var repl []string
	for _, r := range cmd.Replacements {
		repl = append(repl, replacementSummary(r))
	}
	logger.Info("disrupting nodes", "command", cmd.ID, "method", cmd.Method, "reason", cmd.Reason,
		"decision", cmd.Decision(), "candidates", cmd.CandidateNames(), "replacements", repl,
		"podCount", cmd.PodCount(), "pods", strings.Join(pods, ", "))
}

// replacementSummary names a replacement by its NodeClaim (or generated prefix) and the
// cheapest instance types it allows.
func replacementSummary(nc *karpv1.NodeClaim) string {
	name := nc.Name
	if name == "" {
		name = nc.GenerateName + "*"
	}
	for _, r := range nc.Spec.Requirements {
		if r.Key == "node.kubernetes.io/instance-type" {
			types := r.Values
			if len(types) > 3 {
				types = append(slices.Clone(types[:3]), "...")
			}
			return fmt.Sprintf("%s(%s)", name, strings.Join(types, ","))
		}
	}
	return name
}
