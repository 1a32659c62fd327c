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
	"k8s.io/apimachinery/pkg/types"
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
		client:  c,
		methods: methods,
		queue:   NewQueue(c, reader, pub, clk, opts.ReplacementTimeout, opts.ReplacementPoll, log.Log.WithName(Name)),
		pub:     pub,
		clock:   clk,
		opts:    opts,
	}
}

// Queue returns the orchestration queue.
func (c *Controller) Queue() *Queue { return c.queue }

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (c *Controller) NeedLeaderElection() bool { return true }

// Start runs the loop until ctx ends: first the commands a previous process left behind are
// recovered, then a pass runs every PollInterval (at once again after a command).
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
		if started {
			wait = time.Second
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.clock.After(wait):
		}
	}
}

// reasons whose allowed disruptions are published per NodePool.
var budgetReasons = []string{karpv1.DisruptionReasonDrifted, karpv1.DisruptionReasonEmpty, karpv1.DisruptionReasonUnderutilized}

// Step runs one pass: the first method with a valid command has it executed. It reports
// whether a command was started.
func (c *Controller) Step(ctx context.Context) (bool, error) {
	logger := log.FromContext(ctx)
	cluster, err := c.load(ctx)
	if err != nil {
		return false, err
	}
	now := c.clock.Now()
	for np, counts := range cluster.Counts() {
		nodesConsumingBudgets.WithLabelValues(np).Set(float64(counts.Deleting + counts.NotReady))
	}
	counts := cluster.Counts()
	for _, reason := range budgetReasons {
		// A budget that cannot be evaluated allows nothing; reportBudgets says so on the
		// NodePool, once, rather than a log line per pass.
		allowed, _ := cluster.Allowed(reason, now)
		for np, n := range allowed {
			allowedDisruptions.WithLabelValues(np, MetricReason(reason)).Set(float64(n))
			if n == 0 && counts[np].Total > 0 {
				c.pub.nodePoolBlocked(cluster.NodePools[np], reason)
			}
		}
	}
	c.reportBudgets(ctx, cluster, now)
	for _, m := range c.methods {
		cmd, err := c.compute(ctx, cluster, m, now)
		if err != nil {
			return false, fmt.Errorf("%s: %w", m.Name(), err)
		}
		if cmd == nil {
			continue
		}
		// The gauge shows the chosen command while it waits for validation: what the pass
		// would do, as `joinery cost` prints it.
		c.recordSavingsOrLog(ctx, cluster, cmd)
		consolidating := consolidationTypeOf(m) != ""
		var savings *float64
		if consolidating {
			savings = c.savingsOf(ctx, cluster, cmd)
			c.pub.consolidationEvent(cmd, "", savings)
		}
		fresh, why, err := c.validate(ctx, m, cmd)
		if err != nil {
			return false, fmt.Errorf("%s: validating: %w", m.Name(), err)
		}
		if fresh != nil {
			// Last check before eviction: the pods' volatile requests still as simulated.
			if why, err = c.verifyVolatile(ctx, fresh); err != nil {
				return false, fmt.Errorf("%s: %w", m.Name(), err)
			}
			if why != "" {
				fresh = nil
			}
		}
		if fresh == nil {
			if consolidating {
				c.pub.consolidationEvent(cmd, why, savings)
			}
			failedValidations.WithLabelValues(consolidationTypeOf(m)).Inc()
			logger.Info("disruption command no longer valid, not executed", "method", m.Name(), "command", cmd.String(), "why", why)
			return false, nil
		}
		if err := c.queue.Start(ctx, fresh); err != nil {
			return false, fmt.Errorf("%s: executing %s: %w", m.Name(), fresh, err)
		}
		recordDecision(fresh, consolidationTypeOf(m))
		if t := consolidationTypeOf(m); t == ConsolidationTypeMulti || t == ConsolidationTypeSingle {
			recordApproved(c.pub, fresh)
		}
		logCommand(logger, fresh)
		return true, nil
	}
	c.recordSavingsOrLog(ctx, cluster, nil)
	return false, nil
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

// compute asks m for a command over cluster, and publishes why nodes were passed over.
func (c *Controller) compute(ctx context.Context, cluster *Cluster, m Method, now time.Time) (*Command, error) {
	start := time.Now()
	defer func() {
		evaluationDuration.WithLabelValues(m.Name(), consolidationTypeOf(m)).Observe(time.Since(start).Seconds())
	}()
	cmd, res, err := computeMethod(ctx, cluster, m, now)
	for _, b := range res.Blocked {
		c.pub.blocked(b)
	}
	eligibleNodes.WithLabelValues(MetricReason(m.Reason())).Set(float64(res.Eligible))
	return cmd, err
}

// validate waits the method's validation delay, reads the cluster again and recomputes the
// command over the same candidates: each must still be a candidate the method acts on, the
// budgets must still allow them all, and the simulation must still accept them with no more
// replacements.
// It returns the recomputed command (fresh objects, fresh replacements), or nil and why.
func (c *Controller) validate(ctx context.Context, m Method, cmd *Command) (*Command, string, error) {
	select {
	case <-ctx.Done():
		return nil, "", ctx.Err()
	case <-c.clock.After(c.validationDelay(m)):
	}
	cluster, err := c.load(ctx)
	if err != nil {
		return nil, "", err
	}
	cands, _ := cluster.Candidates(m.Reason())
	byName := map[string]*Candidate{}
	for _, cand := range cands {
		byName[cand.Name()] = cand
	}
	var fresh []*Candidate
	perPool := map[string]int{}
	for _, old := range cmd.Candidates {
		cand, ok := byName[old.Name()]
		if !ok || !m.ShouldDisrupt(cand) {
			return nil, fmt.Sprintf("%s is no longer a %s candidate", old.Name(), m.Name()), nil
		}
		fresh = append(fresh, cand)
		perPool[cand.NodePool.Name]++
	}
	allowed, _ := cluster.Allowed(m.Reason(), c.clock.Now())
	for np, n := range perPool {
		if allowed[np] < n {
			return nil, fmt.Sprintf("nodepool %s now allows %d disruptions for %s, the command needs %d", np, allowed[np], m.Reason(), n), nil
		}
	}
	if rv, ok := m.(revalidator); ok {
		out, why, err := rv.revalidate(ctx, cluster, cmd, fresh)
		if err != nil || out == nil {
			return nil, why, err
		}
		if len(out.Replacements) > len(cmd.Replacements) {
			return nil, fmt.Sprintf("now needs %d replacements instead of %d", len(out.Replacements), len(cmd.Replacements)), nil
		}
		return out, "", nil
	}
	out := &Command{Method: cmd.Method, Reason: cmd.Reason, Candidates: fresh, Destinations: map[types.UID]string{}}
	if len(cmd.Replacements) > 0 || out.PodCount() > 0 {
		sim, ok := simulatorOf(m)
		if !ok {
			return nil, "pods appeared on the candidates", nil
		}
		result, err := sim.Simulate(ctx, cluster, fresh)
		if err != nil {
			return nil, "", err
		}
		if why := result.Refusal(cluster, fresh); why != "" {
			return nil, why, nil
		}
		if len(result.Replacements) > len(cmd.Replacements) {
			return nil, fmt.Sprintf("now needs %d replacements instead of %d", len(result.Replacements), len(cmd.Replacements)), nil
		}
		out.Replacements, out.Destinations = result.Replacements, result.Destinations
	}
	return out, "", nil
}

// validationDelay is how long m's commands wait before validation: consolidation's delay for
// the consolidation methods, the loop's for the others.
func (c *Controller) validationDelay(m Method) time.Duration {
	if consolidationTypeOf(m) != "" {
		return c.opts.ConsolidationValidationDelay
	}
	return c.opts.ValidationDelay
}

// revalidator is a method that checks its own commands again after the validation delay
// (consolidation re-prices the replacement).
type revalidator interface {
	revalidate(ctx context.Context, cluster *Cluster, old *Command, fresh []*Candidate) (*Command, string, error)
}

// consolidationTypeOf is the consolidation_type metric label of m ("" for other methods).
func consolidationTypeOf(m Method) string {
	if t, ok := m.(interface{ consolidationType() string }); ok {
		return t.consolidationType()
	}
	return ""
}

// simulatorOf returns the simulator of a method that moves pods.
func simulatorOf(m Method) (Simulator, bool) {
	if s, ok := m.(interface{ simulator() Simulator }); ok && s.simulator() != nil {
		return s.simulator(), true
	}
	return nil, false
}

func (d *Drift) simulator() Simulator { return d.Simulator }

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
