package disruption

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// maxRetryBackoff caps the wait between attempts at a command step that failed (a webhook
// or policy refusing a delete, an API server restart, a timeout).
const maxRetryBackoff = 20 * time.Second

// Queue executes commands: it marks and taints the candidates, launches the replacements,
// waits until they are initialized, then deletes the candidates (the termination controller
// drains them). A replacement that disappears (launch failure) or is not initialized within
// the timeout rolls the command back: replacements deleted, candidates untainted and
// unmarked.
//
// Every step is recorded on the cluster's objects, and one level-based pass (Reconcile, every
// poll while Run runs) advances every command it finds there, whoever started it: a step that
// fails is retried with backoff until the command is finished or rolled back, so no failed
// API call strands a candidate marked and tainted until a restart.
type Queue struct {
	// client reads from the cache and writes.
	client client.Client
	// reader reads from the API server. A pass acts on the cache, but confirms with the API
	// server before it acts on something missing (a replacement not yet in the cache, a mark
	// whose status has not arrived, a taint whose mark has not).
	reader  client.Reader
	pub     *publisher
	clock   clock.Clock
	timeout time.Duration
	poll    time.Duration
	log     logr.Logger

	mu sync.Mutex
	// busy are commands a caller is advancing outside the pass (Start): the pass leaves them.
	busy map[string]bool
	// abandoned are commands whose start failed, with why: the pass rolls them back.
	abandoned map[string]string
	// active are the commands not finished at the last pass, and those started since.
	active map[string]bool
	// retries are the failed attempts of a command and when the next is due.
	retries map[string]retryState
	// announced are the commands whose WaitingReadiness event was published.
	announced map[string]bool
	// deleted are the candidates this queue deleted: a pass whose cache does not show the
	// deletion yet must not delete, count and announce them again.
	deleted map[types.UID]bool
	wake    chan struct{}
	wg      sync.WaitGroup
}

type retryState struct {
	failures int
	next     time.Time
}

// NewQueue returns a queue; timeout bounds the wait for replacements, poll is the time
// between passes.
func NewQueue(c client.Client, reader client.Reader, pub *publisher, clk clock.Clock, timeout, poll time.Duration, log logr.Logger) *Queue {
	return &Queue{client: c, reader: reader, pub: pub, clock: clk, timeout: timeout, poll: poll, log: log,
		busy: map[string]bool{}, abandoned: map[string]string{}, active: map[string]bool{},
		retries: map[string]retryState{}, announced: map[string]bool{}, deleted: map[types.UID]bool{}, wake: make(chan struct{}, 1)}
}

// Running reports how many commands are not finished yet.
func (q *Queue) Running() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.active)
}

// RunInBackground runs Run in a goroutine; Wait waits for it after ctx ends.
func (q *Queue) RunInBackground(ctx context.Context) {
	q.wg.Add(1)
	go func() {
		defer q.wg.Done()
		q.Run(ctx)
	}()
}

// Wait blocks until RunInBackground's goroutine has returned (after ctx ends).
func (q *Queue) Wait() { q.wg.Wait() }

// Run reconciles every poll, and at once after a command started, until ctx ends.
func (q *Queue) Run(ctx context.Context) {
	for {
		if err := q.Reconcile(ctx); err != nil && ctx.Err() == nil {
			q.log.Error(err, "advancing disruption commands")
		}
		select {
		case <-ctx.Done():
			return
		case <-q.wake:
		case <-q.clock.After(q.poll):
		}
	}
}

// NodeClaimChanged is told of a NodeClaim change the cache saw (old nil when it is new, nc nil
// when it is gone): a change that can advance a command — a replacement initialized or gone,
// a candidate gone — runs the pass now rather than at its next poll.
func (q *Queue) NodeClaimChanged(old, nc *karpv1.NodeClaim) {
	if advancesCommand(old, nc) {
		q.poke()
	}
}

// advancesCommand reports whether a change from old to nc is one a command waits for.
func advancesCommand(old, nc *karpv1.NodeClaim) bool {
	member := func(x *karpv1.NodeClaim) bool {
		return x != nil && (x.Annotations[CommandAnnotationKey] != "" || x.Annotations[ReplacementForAnnotationKey] != "")
	}
	switch {
	case !member(old) && !member(nc):
		return false
	case old == nil || nc == nil:
		return true
	}
	return isInitialized(old) != isInitialized(nc) || (old.DeletionTimestamp == nil) != (nc.DeletionTimestamp == nil)
}

func (q *Queue) poke() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Start begins cmd: marking, tainting and launching happen before it returns, and a command
// without replacements deletes its candidates. The rest (the wait for the replacements, and
// any step that failed, including the rollback of a start that failed) is done by the passes.
func (q *Queue) Start(ctx context.Context, cmd *Command) error {
	cmd.ID = cmd.Method + "-" + utilrand.String(8)
	q.mu.Lock()
	q.busy[cmd.ID] = true
	q.active[cmd.ID] = true
	q.mu.Unlock()
	defer func() {
		q.mu.Lock()
		delete(q.busy, cmd.ID)
		q.mu.Unlock()
		q.poke()
	}()
	err := q.launch(ctx, cmd)
	if err != nil {
		q.mu.Lock()
		q.abandoned[cmd.ID] = err.Error()
		q.mu.Unlock()
	}
	if err != nil || len(cmd.Replacements) == 0 {
		// Roll back, or delete the candidates, now; a failure is retried by the passes.
		if _, stepErr := q.advanceFromAPI(ctx, cmd.ID); stepErr != nil {
			q.retried(cmd.ID, stepErr)
		}
	}
	return err
}

// launch marks and taints cmd's candidates and creates its replacements.
func (q *Queue) launch(ctx context.Context, cmd *Command) error {
	started := q.clock.Now().UTC().Truncate(time.Second)
	for _, cand := range cmd.Candidates {
		if err := q.mark(ctx, cand.NodeClaim, cmd, started); err != nil {
			return err
		}
		if err := q.taint(ctx, cand.Node.Name, true); err != nil {
			return fmt.Errorf("tainting node %s: %w", cand.Node.Name, err)
		}
	}
	for _, repl := range cmd.Replacements {
		if repl.Annotations == nil {
			repl.Annotations = map[string]string{}
		}
		repl.Annotations[ReplacementForAnnotationKey] = cmd.ID
		if err := q.client.Create(ctx, repl); err != nil {
			return fmt.Errorf("creating replacement nodeclaim for %s: %w", cmd, err)
		}
		recordCreated(cmd.Reason, repl)
	}
	if len(cmd.Replacements) > 0 {
		for _, cand := range cmd.Candidates {
			q.pub.publish(cand.NodeClaim, cand.Node, corev1.EventTypeNormal, EventDisruptionLaunching, "Disrupt",
				fmt.Sprintf("Launching NodeClaim: %s", cmd.Reason))
		}
	}
	return nil
}

// members are a command's candidates and replacements.
type members struct {
	cands, repls []*karpv1.NodeClaim
}

// group sorts NodeClaims into commands by ID.
func group(items []karpv1.NodeClaim) map[string]*members {
	out := map[string]*members{}
	get := func(id string) *members {
		if out[id] == nil {
			out[id] = &members{}
		}
		return out[id]
	}
	for i := range items {
		nc := &items[i]
		if id := nc.Annotations[CommandAnnotationKey]; id != "" {
			get(id).cands = append(get(id).cands, nc)
		}
		if id := nc.Annotations[ReplacementForAnnotationKey]; id != "" {
			get(id).repls = append(get(id).repls, nc)
		}
	}
	return out
}

// Recover is one pass, run when the loop starts (after a restart or a leader change).
func (q *Queue) Recover(ctx context.Context) error { return q.Reconcile(ctx) }

// Reconcile advances every command the cluster shows, once, and removes disrupted taints no
// command holds. A command whose last attempt failed waits for its backoff.
func (q *Queue) Reconcile(ctx context.Context) error {
	// Nodes before NodeClaims: a candidate is marked before its node is tainted, so a taint
	// seen here has its mark in the list below (confirmed with the API server before a
	// taint is removed, since the two caches are not in step).
	var nodes corev1.NodeList
	if err := q.client.List(ctx, &nodes); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	var list karpv1.NodeClaimList
	if err := q.client.List(ctx, &list); err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	cmds := group(list.Items)
	var errs []error
	active := map[string]bool{}
	for _, id := range sortedKeys(cmds) {
		if len(cmds[id].cands) == 0 {
			continue // a finished command's replacements keep its ID
		}
		q.mu.Lock()
		busy, r := q.busy[id], q.retries[id]
		q.mu.Unlock()
		if busy || q.clock.Now().Before(r.next) {
			active[id] = true
			continue
		}
		done, err := q.advance(ctx, id, cmds[id], false)
		if err != nil {
			q.retried(id, err)
			errs = append(errs, fmt.Errorf("command %s: %w", id, err))
		} else {
			q.mu.Lock()
			delete(q.retries, id)
			q.mu.Unlock()
		}
		if !done || err != nil {
			active[id] = true
		}
	}
	if err := q.removeStrayTaints(ctx, nodes.Items, list.Items); err != nil {
		errs = append(errs, err)
	}
	q.mu.Lock()
	for id := range q.busy {
		active[id] = true
	}
	q.active = active
	for _, m := range []map[string]bool{q.announced} {
		for id := range m {
			if !active[id] {
				delete(m, id)
			}
		}
	}
	for id := range q.abandoned {
		if !active[id] {
			delete(q.abandoned, id)
		}
	}
	for id := range q.retries {
		if !active[id] {
			delete(q.retries, id)
		}
	}
	q.mu.Unlock()
	return errors.Join(errs...)
}

// retried records a failed attempt at command id: the next waits poll, doubling to
// maxRetryBackoff.
func (q *Queue) retried(id string, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	r := q.retries[id]
	r.failures++
	wait := q.poll << min(r.failures-1, 10)
	if wait <= 0 || wait > maxRetryBackoff {
		wait = maxRetryBackoff
	}
	r.next = q.clock.Now().Add(wait)
	q.retries[id] = r
	q.log.Info("disruption command step failed, retrying", "command", id, "attempt", r.failures, "retryIn", wait, "error", err.Error())
}

// advanceFromAPI advances command id from the API server's view.
func (q *Queue) advanceFromAPI(ctx context.Context, id string) (bool, error) {
	var list karpv1.NodeClaimList
	if err := q.reader.List(ctx, &list); err != nil {
		return false, fmt.Errorf("listing nodeclaims: %w", err)
	}
	m := group(list.Items)[id]
	if m == nil || len(m.cands) == 0 {
		return true, nil
	}
	return q.advance(ctx, id, m, true)
}

// advance takes command id one step: it reports whether the command is finished (its
// candidates deleted, or the command rolled back). fresh says m was read from the API server;
// from the cache, anything decided on a missing object is confirmed there first.
func (q *Queue) advance(ctx context.Context, id string, m *members, fresh bool) (bool, error) {
	q.mu.Lock()
	why := q.abandoned[id]
	q.mu.Unlock()
	if why != "" {
		return true, q.rollback(ctx, id, m, "starting the command failed: "+why)
	}
	// A mark this cluster's queue did not make (copied by GitOps, restored from a backup)
	// is removed, never acted on.
	var stray, genuine []*karpv1.NodeClaim
	for _, nc := range m.cands {
		if startedHere(nc, id) {
			genuine = append(genuine, nc)
		} else {
			stray = append(stray, nc)
		}
	}
	if len(stray) > 0 && !fresh {
		return q.advanceFromAPI(ctx, id)
	}
	for _, nc := range stray {
		if err := q.removeStrayMark(ctx, nc); err != nil {
			return false, err
		}
	}
	if len(genuine) == 0 {
		return true, nil
	}
	if slices.ContainsFunc(genuine, func(nc *karpv1.NodeClaim) bool { return nc.DeletionTimestamp != nil }) {
		// Termination began: finish it.
		return true, q.terminate(ctx, genuine)
	}
	expected, started, corrupt := commandState(genuine)
	if corrupt != "" {
		return true, q.rollback(ctx, id, m, corrupt)
	}
	live, initialized := 0, 0
	for _, r := range m.repls {
		if r.DeletionTimestamp != nil {
			continue
		}
		live++
		if isInitialized(r) {
			initialized++
		}
	}
	switch {
	case live < expected && !fresh:
		return q.advanceFromAPI(ctx, id)
	case live < expected:
		return true, q.rollbackBackingOff(ctx, id, m, fmt.Sprintf("%d of %d replacement NodeClaims are gone (launch failed or deleted)", expected-live, expected))
	case initialized >= expected:
		return true, q.terminate(ctx, genuine)
	case q.clock.Since(started) > replacementTimeout(q.timeout, q.Running()):
		return true, q.rollbackBackingOff(ctx, id, m, fmt.Sprintf("replacements not initialized within %s", replacementTimeout(q.timeout, q.Running())))
	}
	q.mu.Lock()
	announced := q.announced[id]
	q.announced[id] = true
	q.mu.Unlock()
	if !announced {
		for _, nc := range genuine {
			q.pub.publish(nc, q.nodeOf(ctx, nc), corev1.EventTypeNormal, EventDisruptionWaitingReadiness, "Disrupt",
				"Waiting on readiness to continue disruption")
		}
	}
	return false, nil
}

// commandState reads the number of replacements and the start time recorded on a command's
// candidates; a missing, unparseable or inconsistent record is returned as corrupt.
func commandState(cands []*karpv1.NodeClaim) (expected int, started time.Time, corrupt string) {
	for i, nc := range cands {
		n, err := strconv.Atoi(nc.Annotations[ReplacementsAnnotationKey])
		if err != nil || n < 0 {
			return 0, time.Time{}, fmt.Sprintf("%s has no valid %s (%q)", nc.Name, ReplacementsAnnotationKey, nc.Annotations[ReplacementsAnnotationKey])
		}
		t, err := time.Parse(time.RFC3339, nc.Annotations[StartedAnnotationKey])
		if err != nil {
			return 0, time.Time{}, fmt.Sprintf("%s has no valid %s (%q)", nc.Name, StartedAnnotationKey, nc.Annotations[StartedAnnotationKey])
		}
		if i > 0 && n != expected {
			return 0, time.Time{}, fmt.Sprintf("candidates disagree on %s (%d and %d)", ReplacementsAnnotationKey, expected, n)
		}
		expected = n
		if i == 0 || t.Before(started) {
			started = t
		}
	}
	return expected, started, ""
}

// disruptedMessagePrefix starts the Disrupted condition's message the queue writes; it names
// the command. The status subresource is written by controllers, not by whoever applies a
// NodeClaim's manifest, so a command annotation without it was not made by this queue.
func disruptedMessagePrefix(id string) string { return "command " + id + ": " }

// startedHere reports whether this cluster's queue marked nc for command id.
func startedHere(nc *karpv1.NodeClaim, id string) bool {
	c := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDisrupted)
	return c != nil && c.Status == metav1.ConditionTrue && strings.HasPrefix(c.Message, disruptedMessagePrefix(id))
}

// removeStrayMark removes a command annotation this queue did not write, with a warning.
func (q *Queue) removeStrayMark(ctx context.Context, nc *karpv1.NodeClaim) error {
	id := nc.Annotations[CommandAnnotationKey]
	q.log.Info("removing a disruption command annotation no command of this cluster made", "nodeclaim", nc.Name, "command", id)
	stored := nc.DeepCopy()
	for _, k := range commandAnnotationKeys {
		delete(nc.Annotations, k)
	}
	if err := q.client.Patch(ctx, nc, client.MergeFrom(stored)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("removing stray command annotation from nodeclaim %s: %w", nc.Name, err)
	}
	q.pub.publish(nc, nil, corev1.EventTypeWarning, EventStrayDisruptionCommand, "Disrupt",
		fmt.Sprintf("Removed %s=%s: no disruption command of this cluster started it; the NodeClaim is not disrupted", CommandAnnotationKey, id))
	return nil
}

// terminate deletes a command's candidates.
func (q *Queue) terminate(ctx context.Context, cands []*karpv1.NodeClaim) error {
	var errs []error
	for _, nc := range cands {
		q.mu.Lock()
		done := q.deleted[nc.UID]
		q.mu.Unlock()
		if nc.DeletionTimestamp != nil || done {
			continue
		}
		reason := nc.Annotations[commandReasonAnnotationKey]
		if err := q.client.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting nodeclaim %s: %w", nc.Name, err))
			continue
		}
		q.mu.Lock()
		q.deleted[nc.UID] = true
		q.mu.Unlock()
		RecordDisrupted(reason, nc)
		q.pub.publish(nc, q.nodeOf(ctx, nc), corev1.EventTypeNormal, EventDisruptionTerminating, "Disrupt",
			fmt.Sprintf("Disrupting Node: %s", reason))
	}
	return errors.Join(errs...)
}

// rollback undoes command id: replacements deleted first (so a failure in between leaves the
// candidates still marked, with fewer replacements than recorded, and the next pass rolls
// back again), then candidates untainted and unmarked.
func (q *Queue) rollback(ctx context.Context, id string, m *members, why string) error {
	log := q.log.WithValues("command", id)
	log.Info("abandoning disruption command", "why", why)
	failed := queueFailure(id, m.cands) // labelled from the marks before unmark removes them
	for _, r := range m.repls {
		if r.DeletionTimestamp == nil {
			if err := q.client.Delete(ctx, r); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("rolling back: deleting replacement %s: %w", r.Name, err)
			}
		}
	}
	for _, nc := range m.cands {
		if nc.DeletionTimestamp != nil {
			continue // already terminating: nothing to undo
		}
		node := q.nodeOf(ctx, nc)
		if node != nil {
			if err := q.taint(ctx, node.Name, false); err != nil {
				return fmt.Errorf("rolling back: untainting node %s: %w", node.Name, err)
			}
		}
		if err := q.unmark(ctx, nc); err != nil {
			return fmt.Errorf("rolling back: %w", err)
		}
		q.pub.publish(nc, node, corev1.EventTypeWarning, EventDisruptionBlocked, "Disrupt", "Disruption abandoned: "+why)
	}
	// Counted once the rollback is done: a failed step is retried and would count again.
	failed.Inc()
	return nil
}

// commandReasonAnnotationKey keeps the disruption reason on a candidate, for the events and
// metrics of a command resumed after a restart.
const commandReasonAnnotationKey = "joinery.dev/disruption-reason"

// commandAnnotationKeys are the annotations a command puts on its candidates.
var commandAnnotationKeys = []string{CommandAnnotationKey, StartedAnnotationKey, ReplacementsAnnotationKey, commandReasonAnnotationKey}

func (q *Queue) mark(ctx context.Context, nc *karpv1.NodeClaim, cmd *Command, started time.Time) error {
	stored := nc.DeepCopy()
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[CommandAnnotationKey] = cmd.ID
	nc.Annotations[StartedAnnotationKey] = started.Format(time.RFC3339)
	nc.Annotations[ReplacementsAnnotationKey] = strconv.Itoa(len(cmd.Replacements))
	nc.Annotations[commandReasonAnnotationKey] = cmd.Reason
	if err := q.client.Patch(ctx, nc, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("marking nodeclaim %s: %w", nc.Name, err)
	}
	stored = nc.DeepCopy()
	now := metav1.NewTime(started)
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeDisrupted, Status: metav1.ConditionTrue,
		Reason: cmd.Reason, Message: disruptedMessagePrefix(cmd.ID) + cmd.String(), LastTransitionTime: now, ObservedGeneration: nc.Generation})
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeDisruptionReason, Status: metav1.ConditionTrue,
		Reason: cmd.Reason, Message: fmt.Sprintf("%s by %s", cmd.Reason, cmd.Method), LastTransitionTime: now, ObservedGeneration: nc.Generation})
	if err := q.client.Status().Patch(ctx, nc, client.MergeFrom(stored)); err != nil {
		return fmt.Errorf("setting disruption conditions on nodeclaim %s: %w", nc.Name, err)
	}
	return nil
}

func (q *Queue) unmark(ctx context.Context, nc *karpv1.NodeClaim) error {
	stored := nc.DeepCopy()
	removedDisrupted := meta.RemoveStatusCondition(&nc.Status.Conditions, karpv1.ConditionTypeDisrupted)
	removedReason := meta.RemoveStatusCondition(&nc.Status.Conditions, karpv1.ConditionTypeDisruptionReason)
	if removedDisrupted || removedReason {
		if err := q.client.Status().Patch(ctx, nc, client.MergeFrom(stored)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("removing disruption conditions from nodeclaim %s: %w", nc.Name, err)
		}
	}
	stored = nc.DeepCopy()
	for _, k := range commandAnnotationKeys {
		delete(nc.Annotations, k)
	}
	if err := q.client.Patch(ctx, nc, client.MergeFrom(stored)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("unmarking nodeclaim %s: %w", nc.Name, err)
	}
	return nil
}

// nodeOf returns nc's Node, or nil.
func (q *Queue) nodeOf(ctx context.Context, nc *karpv1.NodeClaim) *corev1.Node {
	if nc.Status.NodeName == "" {
		return nil
	}
	node := &corev1.Node{}
	if err := q.reader.Get(ctx, client.ObjectKey{Name: nc.Status.NodeName}, node); err != nil {
		return nil
	}
	return node
}

// taint adds (or removes) karpenter.sh/disrupted:NoSchedule on the node. A node being deleted
// keeps its taint: the termination controller drains it.
func (q *Queue) taint(ctx context.Context, nodeName string, add bool) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node := &corev1.Node{}
		if err := q.reader.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
			if apierrors.IsNotFound(err) && !add {
				return nil
			}
			return fmt.Errorf("getting node %s: %w", nodeName, err)
		}
		if add == hasDisruptedTaint(node) || (!add && node.DeletionTimestamp != nil) {
			return nil
		}
		stored := node.DeepCopy()
		if add {
			node.Spec.Taints = append(node.Spec.Taints, disruptedTaint)
		} else {
			node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool {
				return t.Key == disruptedTaint.Key && t.Effect == disruptedTaint.Effect
			})
		}
		return q.client.Patch(ctx, node, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{}))
	})
}

// removeStrayTaints removes the disrupted taint from nodes not being deleted whose NodeClaim
// is neither marked by a command nor being deleted; what the cache shows is confirmed with
// the API server first.
func (q *Queue) removeStrayTaints(ctx context.Context, nodes []corev1.Node, claims []karpv1.NodeClaim) error {
	suspects := strayTainted(nodes, claims)
	if len(suspects) == 0 {
		return nil
	}
	var fresh corev1.NodeList
	if err := q.reader.List(ctx, &fresh); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	var list karpv1.NodeClaimList
	if err := q.reader.List(ctx, &list); err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	q.mu.Lock()
	starting := len(q.busy) > 0
	q.mu.Unlock()
	if starting {
		return nil // a command being started may not have marked its candidates yet: next pass
	}
	var errs []error
	for _, name := range strayTainted(fresh.Items, list.Items) {
		if !slices.Contains(suspects, name) {
			continue
		}
		q.log.Info("removing disrupted taint no command holds", "node", name)
		if err := q.taint(ctx, name, false); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// strayTainted names the nodes with the disrupted taint that no command or termination holds.
func strayTainted(nodes []corev1.Node, claims []karpv1.NodeClaim) []string {
	owned := map[string]bool{}
	for i := range claims {
		nc := &claims[i]
		if nc.DeletionTimestamp != nil || isMarked(nc) {
			owned[nc.Status.NodeName] = true
		}
	}
	var out []string
	for i := range nodes {
		n := &nodes[i]
		if hasDisruptedTaint(n) && n.DeletionTimestamp == nil && !owned[n.Name] {
			out = append(out, n.Name)
		}
	}
	return out
}
