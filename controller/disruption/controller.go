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
	"github.com/joinery-dev/joinery/controller/cost"
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
	// soon says the last pass left something for a pass a second later (a command waiting
	// for its budget, or candidates whose budget frees when nodes being deleted are gone).
	soon bool
}

// waitingCommand is a command chosen by a pass, waiting for its validation.
type waitingCommand struct {
	method Method
	cmd    *Command
	// due is when its validation delay has passed; savings what it saves (consolidation).
	due     time.Time
	savings *float64
}

// maxBudgetWait bounds how long a validated command waits for its budget to allow it (the
// nodes of the commands before it to be gone) before it is dropped and chosen afresh.
const maxBudgetWait = time.Minute

// maxCommandsPerPass bounds the independent commands one pass chooses.
const maxCommandsPerPass = 16

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
		started: map[string]time.Time{},
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
		}
	}
}

// reasons whose allowed disruptions are published per NodePool.
var budgetReasons = []string{karpv1.DisruptionReasonDrifted, karpv1.DisruptionReasonEmpty, karpv1.DisruptionReasonUnderutilized}

// Step runs one pass. Unless commands of an earlier pass still wait for their budget, it
// chooses commands: the first method's command, and then, with that command's candidates set
// aside, the next command the methods find, and so on (independent commands, each simulated
// as if the ones before it had run). It waits each command's validation delay, once for all,
// then validates them in order against a fresh read of the cluster and starts each that is
// still valid and that its budget allows now; one the budget does not allow yet waits for a
// later pass. It reports whether a command was started.
func (c *Controller) Step(ctx context.Context) (bool, error) {
	c.soon = false
	cluster, err := c.load(ctx)
	if err != nil {
		return false, err
	}
	now := c.clock.Now()
	c.publishBudgets(ctx, cluster, now)
	if len(c.waiting) == 0 {
		if err := c.choose(ctx, cluster, now); err != nil {
			return false, err
		}
		if len(c.waiting) == 0 {
			c.recordSavingsOrLog(ctx, cluster, nil)
			return false, nil
		}
	}
	return c.execute(ctx)
}

// publishBudgets publishes the allowed disruptions and the budget events and conditions.
func (c *Controller) publishBudgets(ctx context.Context, cluster *Cluster, now time.Time) {
	counts := cluster.Counts()
	for np, n := range counts {
		nodesConsumingBudgets.WithLabelValues(np).Set(float64(n.Deleting + n.NotReady))
	}
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
}

// choose asks the methods, in order, for a command; while one is found that launches nothing,
// and the first one's validation delay has not passed, its candidates are reserved and the
// methods are asked again. The commands found wait in c.waiting.
func (c *Controller) choose(ctx context.Context, cluster *Cluster, now time.Time) error {
	var first time.Time
	for len(c.waiting) < maxCommandsPerPass {
		if len(c.waiting) > 0 && !c.clock.Now().Before(first) {
			return nil // choosing more would delay the first command
		}
		m, cmd, err := c.next(ctx, cluster, now, len(c.waiting) == 0)
		if err != nil || cmd == nil {
			return err
		}
		w := &waitingCommand{method: m, cmd: cmd, due: c.clock.Now().Add(c.validationDelay(m))}
		if len(c.waiting) == 0 {
			first = w.due
			// The gauge shows the pass's first command while it waits for validation: what
			// the pass would do, as `joinery cost` prints it.
			c.recordSavingsOrLog(ctx, cluster, cmd)
		}
		if consolidationTypeOf(m) != "" {
			w.savings = c.savingsOf(ctx, cluster, cmd)
			c.pub.consolidationEvent(cmd, "", w.savings)
		}
		c.waiting = append(c.waiting, w)
		if len(cmd.Replacements) > 0 {
			// Its replacements are not on the cluster later commands would be simulated on.
			return nil
		}
		cluster.reserve(cmd)
	}
	return nil
}

// next is the first method's command over cluster (its reserved candidates set aside).
// first says it is the pass's first question: only then are the eligible-nodes gauges set.
func (c *Controller) next(ctx context.Context, cluster *Cluster, now time.Time, first bool) (Method, *Command, error) {
	for _, m := range c.methods {
		cmd, err := c.compute(ctx, cluster, m, now, first)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", m.Name(), err)
		}
		if cmd != nil {
			return m, cmd, nil
		}
	}
	return nil, nil, nil
}

// execute validates the waiting commands in order, each once its validation delay has passed,
// against a fresh read of the cluster, and starts those still valid that their budgets allow.
// A command whose budget does not allow it yet keeps waiting, up to maxBudgetWait after its
// delay; one no longer valid is dropped.
func (c *Controller) execute(ctx context.Context) (bool, error) {
	logger := log.FromContext(ctx)
	started := false
	var keep []*waitingCommand
	for i, w := range c.waiting {
		m := w.method
		if err := c.sleepUntil(ctx, w.due); err != nil {
			c.waiting = append(keep, c.waiting[i:]...)
			return started, err
		}
		cluster, err := c.load(ctx)
		if err != nil {
			c.waiting = append(keep, c.waiting[i:]...)
			return started, err
		}
		fresh, why, budget, err := c.validate(ctx, cluster, m, w.cmd)
		if err != nil {
			c.waiting = append(keep, c.waiting[i+1:]...)
			return started, fmt.Errorf("%s: validating: %w", m.Name(), err)
		}
		if budget && c.clock.Since(w.due) < maxBudgetWait {
			keep = append(keep, w)
			c.soon = true
			continue
		}
		if fresh != nil {
			// Last check before eviction: the pods' volatile requests still as simulated.
			if why, err = c.verifyVolatile(ctx, fresh); err != nil {
				c.waiting = append(keep, c.waiting[i+1:]...)
				return started, fmt.Errorf("%s: %w", m.Name(), err)
			}
			if why != "" {
				fresh = nil
			}
		}
		if fresh == nil {
			if consolidationTypeOf(m) != "" {
				c.pub.consolidationEvent(w.cmd, why, w.savings)
			}
			failedValidations.WithLabelValues(consolidationTypeOf(m)).Inc()
			logger.Info("disruption command no longer valid, not executed", "method", m.Name(), "command", w.cmd.String(), "why", why)
			continue
		}
		if err := c.queue.Start(ctx, fresh); err != nil {
			c.waiting = append(keep, c.waiting[i+1:]...)
			return started, fmt.Errorf("%s: executing %s: %w", m.Name(), fresh, err)
		}
		started = true
		for _, cand := range fresh.Candidates {
			c.started[cand.Name()] = c.clock.Now()
		}
		recordDecision(fresh, consolidationTypeOf(m))
		if t := consolidationTypeOf(m); t == ConsolidationTypeMulti || t == ConsolidationTypeSingle {
			recordApproved(c.pub, fresh)
		}
		logCommand(logger, fresh)
	}
	c.waiting = keep
	return started, nil
}

// startedTTL bounds how long a started candidate is assumed chosen while the cache does not
// show it: the cache follows the API server within moments.
const startedTTL = time.Minute

// assumeStarted marks, in cluster (read from the cache), the candidates this loop started
// that the cache does not show chosen or gone yet, so budgets count them: a pass right after a
// start must not see their room as free.
func (c *Controller) assumeStarted(cluster *Cluster) {
	if len(c.started) == 0 {
		return
	}
	now := c.clock.Now()
	present := map[string]bool{}
	for _, nc := range cluster.NodeClaims {
		at, ok := c.started[nc.Name]
		if !ok {
			continue
		}
		present[nc.Name] = true
		if cluster.isDeleting(nc) || now.Sub(at) > startedTTL {
			delete(c.started, nc.Name)
			continue
		}
		if nc.Annotations == nil {
			nc.Annotations = map[string]string{}
		}
		nc.Annotations[CommandAnnotationKey] = "starting"
	}
	for name := range c.started {
		if !present[name] {
			delete(c.started, name)
		}
	}
}

// sleepUntil waits until t on the loop's clock, or ctx ends.
func (c *Controller) sleepUntil(ctx context.Context, t time.Time) error {
	d := t.Sub(c.clock.Now())
	if d <= 0 {
		return ctx.Err()
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-c.clock.After(d):
		return nil
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
	pools := make([]*karpv1.NodePool, 0, len(cluster.NodePools))
	for _, np := range cluster.NodePools {
		pools = append(pools, np)
	}
	saved, err := cmd.Savings(ctx, cost.NewPricer(c.opts.InstanceTypes, pools))
	if err != nil {
		return nil
	}
	total := 0.0
	for _, v := range saved {
		total += v
	}
	return &total
}

// compute asks m for a command over cluster, and publishes why nodes were passed over. first
// says the pass asks for its first command: the eligible-nodes gauge counts that question's
// candidates, not those left after reservations.
func (c *Controller) compute(ctx context.Context, cluster *Cluster, m Method, now time.Time, first bool) (*Command, error) {
	start := time.Now()
	defer func() {
		evaluationDuration.WithLabelValues(m.Name(), consolidationTypeOf(m)).Observe(time.Since(start).Seconds())
	}()
	cmd, res, err := computeMethod(ctx, cluster, m, now)
	for _, b := range res.Blocked {
		c.pub.blocked(b)
	}
	if first {
		eligibleNodes.WithLabelValues(MetricReason(m.Reason())).Set(float64(res.Eligible))
	}
	if cmd == nil && res.WaitingForBudget {
		c.soon = true
	}
	return cmd, err
}

// validate recomputes cmd over the same candidates in cluster (read after the validation
// delay): each must still be a candidate the method acts on, the budgets must still allow them
// all, and the simulation must still accept them with no more replacements.
// It returns the recomputed command (fresh objects, fresh replacements), or nil and why;
// budget says the budget alone refused it, so it may wait for a later pass.
func (c *Controller) validate(ctx context.Context, cluster *Cluster, m Method, cmd *Command) (out *Command, why string, budget bool, err error) {
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
			return nil, fmt.Sprintf("%s is no longer a %s candidate", old.Name(), m.Name()), false, nil
		}
		fresh = append(fresh, cand)
		perPool[cand.NodePool.Name]++
	}
	allowed, _ := cluster.Allowed(m.Reason(), c.clock.Now())
	for _, np := range sortedKeys(perPool) {
		if n := perPool[np]; allowed[np] < n {
			return nil, fmt.Sprintf("nodepool %s now allows %d disruptions for %s, the command needs %d", np, allowed[np], m.Reason(), n), true, nil
		}
	}
	if rv, ok := m.(revalidator); ok {
		out, why, err := rv.revalidate(ctx, cluster, cmd, fresh)
		if err != nil || out == nil {
			return nil, why, false, err
		}
		if len(out.Replacements) > len(cmd.Replacements) {
			return nil, fmt.Sprintf("now needs %d replacements instead of %d", len(out.Replacements), len(cmd.Replacements)), false, nil
		}
		return out, "", false, nil
	}
	out = &Command{Method: cmd.Method, Reason: cmd.Reason, Candidates: fresh, Destinations: map[types.UID]string{}}
	if len(cmd.Replacements) > 0 || out.PodCount() > 0 {
		sim, ok := simulatorOf(m)
		if !ok {
			return nil, "pods appeared on the candidates", false, nil
		}
		result, err := sim.Simulate(ctx, cluster, fresh)
		if err != nil {
			return nil, "", false, err
		}
		if why := result.Refusal(cluster, fresh); why != "" {
			return nil, why, false, nil
		}
		if len(result.Replacements) > len(cmd.Replacements) {
			return nil, fmt.Sprintf("now needs %d replacements instead of %d", len(result.Replacements), len(cmd.Replacements)), false, nil
		}
		out.Replacements, out.Destinations = result.Replacements, result.Destinations
	}
	return out, "", false, nil
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
