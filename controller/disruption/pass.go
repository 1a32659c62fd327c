package disruption

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// The pass: the loop's hot path (Step) — choose the commands, wait, validate and start them.

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
		if w := c.budgetWait; w != nil && now.Before(w.until) && !w.freed(cluster) {
			// Candidates wait for nodes being deleted: nothing to decide until one is gone.
			c.soon = true
			return false, nil
		}
		c.budgetWait = nil
		if err := c.choose(ctx, cluster, now); err != nil {
			return false, err
		}
		if len(c.waiting) == 0 {
			c.recordSavingsOrLog(ctx, cluster, nil)
			return false, nil
		}
		c.budgetWait = nil // a command was found: the pass goes on with it
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

// chooseCommands is the pass's choice, shared by Controller.Step and DryRun: it asks the
// methods, in order, for a command over cluster; while one is found, its candidates and the
// nodes its pods go to are set aside (Cluster.reserve) and the methods are asked again, up to
// maxCommandsPerPass. A later command is simulated on the cluster as it will be once the
// earlier ones are done: a deleting one's pods placed again first, a launching one's pods on
// its destinations and its replacements launching (Cluster.launching). visit sees every
// method's answer and how long it took; chosen gets each command, and stops the choice by
// returning false. The reservations are lifted before it returns.
func chooseCommands(ctx context.Context, cluster *Cluster, methods []Method, now time.Time,
	visit func(Method, MethodResult, time.Duration), chosen func(Method, *Command) bool) error {
	defer cluster.unreserve()
	for n := 0; n < maxCommandsPerPass; n++ {
		var m Method
		var cmd *Command
		for _, candidate := range methods {
			start := time.Now()
			c, res, err := computeMethod(ctx, cluster, candidate, now)
			visit(candidate, res, time.Since(start))
			if err != nil {
				return fmt.Errorf("%s: %w", candidate.Name(), err)
			}
			if c != nil {
				m, cmd = candidate, c
				break
			}
		}
		if cmd == nil || !chosen(m, cmd) {
			return nil
		}
		cluster.reserve(cmd)
	}
	return nil
}

// choose chooses the pass's commands (chooseCommands), publishing why nodes were passed over
// and the methods' metrics, until the first command's validation delay has passed. The
// commands chosen wait in c.waiting.
func (c *Controller) choose(ctx context.Context, cluster *Cluster, now time.Time) error {
	var first time.Time
	eligible := map[string]int{}
	return chooseCommands(ctx, cluster, c.methods, now, func(m Method, res MethodResult, took time.Duration) {
		c.observe(cluster, m, res, took, len(c.waiting) == 0, now)
		eligible[m.Name()] = res.Eligible
	}, func(m Method, cmd *Command) bool {
		w := &waitingCommand{method: m, cmd: cmd, due: c.clock.Now().Add(c.validationDelay(m))}
		if len(c.waiting) == 0 {
			first = w.due
			// The gauge shows the pass's first command while it waits for validation: what
			// the pass would do, as `joinery cost` prints it.
			c.recordSavingsOrLog(ctx, cluster, cmd)
		}
		if m.ConsolidationType() != "" {
			w.savings = c.savingsOf(ctx, cluster, cmd)
			c.pub.consolidationEvent(cmd, "", w.savings)
		}
		c.waiting = append(c.waiting, w)
		log.FromContext(ctx).Info("disruption command chosen, validating", "method", m.Name(), "command", cmd.String(),
			"eligible", eligible[m.Name()], "validateAt", w.due.UTC().Format(time.RFC3339))
		return c.clock.Now().Before(first) // choosing more would delay the first command
	})
}

// execute validates the waiting commands in order, each once its validation delay has passed,
// against a fresh read of the cluster, and starts those still valid that their budgets allow.
// A command whose budget does not allow it yet keeps waiting, up to maxBudgetWait after its
// delay; one no longer valid is dropped.
func (c *Controller) execute(ctx context.Context) (bool, error) {
	logger := log.FromContext(ctx)
	started := false
	var keep []*waitingCommand
	var cluster *Cluster // read again after a wait or a start, else shared by the commands
	for i, w := range c.waiting {
		m := w.method
		if c.clock.Now().Before(w.due) {
			cluster = nil
			if err := c.sleepUntil(ctx, w.due); err != nil {
				c.waiting = append(keep, c.waiting[i:]...)
				return started, err
			}
		}
		if cluster == nil {
			var err error
			if cluster, err = c.load(ctx); err != nil {
				c.waiting = append(keep, c.waiting[i:]...)
				return started, err
			}
		}
		fresh, err := c.validate(ctx, cluster, m, w.cmd)
		refusal := refusalOf(err)
		if err != nil && refusal == nil {
			c.waiting = append(keep, c.waiting[i+1:]...)
			return started, fmt.Errorf("%s: validating: %w", m.Name(), err)
		}
		if refusal != nil && refusal.Budget {
			if c.clock.Since(w.due) < maxBudgetWait {
				keep = append(keep, w)
				c.soon = true
				continue
			}
			// Still valid, only not allowed yet (the commands before it launch slowly): it
			// is chosen afresh later, which is no failed validation.
			logger.V(1).Info("disruption command waited too long for its budget, dropped to be chosen again", "method", m.Name(), "command", w.cmd.String(), "why", refusal.Message)
			continue
		}
		if refusal == nil {
			// Last check before eviction: the pods' volatile requests still as simulated.
			err := c.verifyVolatile(ctx, fresh)
			if refusal = refusalOf(err); err != nil && refusal == nil {
				c.waiting = append(keep, c.waiting[i+1:]...)
				return started, fmt.Errorf("%s: %w", m.Name(), err)
			}
		}
		if refusal != nil {
			if m.ConsolidationType() != "" {
				c.pub.consolidationEvent(w.cmd, refusal.Message, w.savings)
			}
			failedValidations.WithLabelValues(m.ConsolidationType()).Inc()
			logger.Info("disruption command no longer valid, not executed", "method", m.Name(), "command", w.cmd.String(), "why", refusal.Message)
			continue
		}
		if err := c.queue.Start(ctx, fresh); err != nil {
			c.waiting = append(keep, c.waiting[i+1:]...)
			return started, fmt.Errorf("%s: executing %s: %w", m.Name(), fresh, err)
		}
		for _, cand := range fresh.Candidates {
			c.started[cand.Name()] = c.clock.Now()
		}
		c.recordArrivals(cluster, fresh)
		started, cluster = true, nil
		recordDecision(fresh, m.ConsolidationType())
		if t := m.ConsolidationType(); t == ConsolidationTypeMulti || t == ConsolidationTypeSingle {
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

// arrivalWindow is how long a node that a started command's pods were simulated onto is no
// candidate (Controller.arrivals): the command evicts within seconds, and the pods its
// workloads create in their place bind within a second or two of that.
const arrivalWindow = 15 * time.Second

// recordArrivals records the existing nodes cmd, just started on cluster, moves pods onto.
func (c *Controller) recordArrivals(cluster *Cluster, cmd *Command) {
	until := c.clock.Now().Add(arrivalWindow)
	for _, dest := range cmd.Destinations {
		if n := cluster.NodeOf[dest]; n != nil {
			c.arrivals[n.Name] = until
		} else if cluster.Nodes[dest] != nil {
			c.arrivals[dest] = until
		}
	}
}

// markArrivals marks, in cluster, the nodes pods of started commands are arriving on
// (Controller.arrivals), forgetting those whose window has passed.
func (c *Controller) markArrivals(cluster *Cluster) {
	now := c.clock.Now()
	for name, until := range c.arrivals {
		if !now.Before(until) {
			delete(c.arrivals, name)
			continue
		}
		if cluster.arriving == nil {
			cluster.arriving = map[string]bool{}
		}
		cluster.arriving[name] = true
	}
}

// budgetWait is what a pass whose candidates waited only for nodes being deleted waits for:
// one of those nodes gone, or until (the poll interval).
type budgetWait struct {
	deleting map[string]bool
	until    time.Time
}

func newBudgetWait(cluster *Cluster, until time.Time) *budgetWait {
	w := &budgetWait{deleting: map[string]bool{}, until: until}
	for _, nc := range cluster.NodeClaims {
		if cluster.isDeleting(nc) {
			w.deleting[nc.Name] = true
		}
	}
	return w
}

// freed reports whether a NodeClaim that was being deleted is gone from cluster, or no longer
// counts against its budget (its instance terminating).
func (w *budgetWait) freed(cluster *Cluster) bool {
	present := 0
	for _, nc := range cluster.NodeClaims {
		if w.deleting[nc.Name] && !instanceTerminating(nc) {
			present++
		}
	}
	return present < len(w.deleting)
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

// observe publishes what a method answered: why nodes were passed over, how long it took,
// and, for the pass's first question (first), the eligible nodes. Candidates that wait only
// for nodes being deleted make the pass look again soon.
func (c *Controller) observe(cluster *Cluster, m Method, res MethodResult, took time.Duration, first bool, now time.Time) {
	evaluationDuration.WithLabelValues(m.Name(), m.ConsolidationType()).Observe(took.Seconds())
	for _, b := range res.Blocked {
		c.pub.blocked(b)
	}
	if first {
		eligibleNodes.WithLabelValues(MetricReason(m.Reason())).Set(float64(res.Eligible))
	}
	if res.WaitingForBudget && c.budgetWait == nil {
		c.soon = true
		c.budgetWait = newBudgetWait(cluster, now.Add(c.opts.PollInterval))
	}
}

// validate recomputes cmd over the same candidates in cluster (read after the validation
// delay): each must still be a candidate the method acts on, the budgets must still allow them
// all, and the method's Revalidate must still accept them with no more replacements. It
// returns the recomputed command (fresh objects, fresh replacements), or a *Refusal saying why
// none (Budget set when only the budget refused it, so it may wait for a later pass).
func (c *Controller) validate(ctx context.Context, cluster *Cluster, m Method, cmd *Command) (*Command, error) {
	cands, blocked := cluster.Candidates(m.Reason(), m.Class())
	byName := map[string]*Candidate{}
	for _, cand := range cands {
		byName[cand.Name()] = cand
	}
	var fresh []*Candidate
	perPool := map[string]int{}
	for _, old := range cmd.Candidates {
		cand, ok := byName[old.Name()]
		if !ok || !m.ShouldDisrupt(cand) {
			return nil, refused("%s is no longer a %s candidate: %s", old.Name(), m.Name(), whyNoCandidate(old.Name(), cand, blocked))
		}
		fresh = append(fresh, cand)
		perPool[cand.NodePool.Name]++
	}
	allowed, _ := cluster.Allowed(m.Reason(), c.clock.Now())
	for _, np := range sortedKeys(perPool) {
		if n := perPool[np]; allowed[np] < n {
			return nil, &Refusal{Budget: true, Message: fmt.Sprintf("nodepool %s now allows %d disruptions for %s, the command needs %d", np, allowed[np], m.Reason(), n)}
		}
	}
	out, err := m.Revalidate(ctx, cluster, cmd, fresh)
	if err != nil {
		return nil, err
	}
	if len(out.Replacements) > len(cmd.Replacements) {
		return nil, refused("now needs %d replacements instead of %d", len(out.Replacements), len(cmd.Replacements))
	}
	return out, nil
}

// whyNoCandidate says why the node named name is no longer a candidate of a method: cand is
// its fresh candidate (nil when the cluster passed it over), blocked the nodes passed over.
// An SRE reading "no longer a candidate" needs the rule that changed.
func whyNoCandidate(name string, cand *Candidate, blocked []Blocked) string {
	for _, b := range blocked {
		if b.NodeClaim != nil && b.NodeClaim.Name == name {
			return strings.TrimPrefix(b.Message, "Cannot disrupt Node: ")
		}
	}
	switch {
	case cand == nil:
		return "it is gone, not initialized, being deleted or set aside"
	case len(cand.Pods) == 0:
		return "it has no pods to move"
	case !meta.IsStatusConditionTrue(cand.NodeClaim.Status.Conditions, karpv1.ConditionTypeConsolidatable):
		return "it is not Consolidatable (a pod was bound to or removed from it within consolidateAfter)"
	}
	return "the method no longer acts on it"
}

// MethodResult is what one method decided in a pass.
type MethodResult struct {
	Method string
	Reason string
	// Eligible counts the candidates the method acts on.
	Eligible int
	// Blocked are the nodes passed over, with the DisruptionBlocked / Unconsolidatable text.
	Blocked []Blocked
	// WaitingForBudget says some candidates' NodePool allows no disruption now only because
	// of nodes being disrupted, which a pass may find gone in a second.
	WaitingForBudget bool
}

// computeMethod asks m for a command over cluster: its candidates, the nodes passed over
// (blocked ones first, then those the method passed over) and the command, if any.
func computeMethod(ctx context.Context, cluster *Cluster, m Method, now time.Time) (*Command, MethodResult, error) {
	res := MethodResult{Method: m.Name(), Reason: m.Reason()}
	cands, blocked := cluster.Candidates(m.Reason(), m.Class())
	var mine []*Candidate
	for _, cand := range cands {
		if !m.ShouldDisrupt(cand) {
			continue
		}
		if why := backingOff(cand.NodeClaim, now); why != "" {
			blocked = append(blocked, Blocked{NodeClaim: cand.NodeClaim, Node: cand.Node, Message: why})
			continue
		}
		mine = append(mine, cand)
	}
	unconsolidatable := reportsUnconsolidatable(m)
	for _, b := range blocked {
		res.Blocked = append(res.Blocked, b)
		// A node consolidation would otherwise consider is also Unconsolidatable, with the
		// pod and reason that hold it.
		if unconsolidatable && consolidatable(b.NodeClaim, cluster.NodePoolOf(b.NodeClaim)) {
			res.Blocked = append(res.Blocked, Blocked{NodeClaim: b.NodeClaim, Node: b.Node, Reason: EventUnconsolidatable,
				Message: strings.TrimPrefix(b.Message, "Cannot disrupt Node: ")})
		}
	}
	res.Eligible = len(mine)
	if len(mine) == 0 {
		return nil, res, nil
	}
	allowed, _ := cluster.Allowed(m.Reason(), now)
	counts := cluster.Counts()
	for _, cand := range mine {
		if np := cand.NodePool.Name; allowed[np] <= 0 && counts[np].Deleting > 0 {
			res.WaitingForBudget = true
			break
		}
	}
	// A NodePool whose budget is held only by nodes being disrupted is decided for as if they
	// were gone: the command waits its validation delay while they go, and starts when the
	// budget allows it (execute), not a validation delay after.
	cmd, passed, err := m.ComputeCommand(ctx, cluster, cluster.AllowedOnceDisrupted(m.Reason(), now), mine)
	res.Blocked = append(res.Blocked, passed...)
	return cmd, res, err
}
