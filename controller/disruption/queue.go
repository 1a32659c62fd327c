package disruption

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// Queue executes commands: it marks and taints the candidates, launches the replacements,
// waits until they are initialized, then deletes the candidates (the termination controller
// drains them). A replacement that disappears (launch failure) or is not initialized within
// the timeout rolls the command back: replacements deleted, candidates untainted and
// unmarked. Every step is recorded on the cluster's objects, so Recover resumes or rolls back
// the commands a previous process left behind.
type Queue struct {
	client client.Client
	// reader reads from the API server: a command's replacements must be seen as soon as
	// they are created, not when the cache catches up.
	reader  client.Reader
	pub     *publisher
	clock   clock.Clock
	timeout time.Duration
	poll    time.Duration
	log     logr.Logger

	mu      sync.Mutex
	running map[string]bool
	wg      sync.WaitGroup
}

// NewQueue returns a queue; timeout bounds the wait for replacements, poll is how often they
// are checked.
func NewQueue(c client.Client, reader client.Reader, pub *publisher, clk clock.Clock, timeout, poll time.Duration, log logr.Logger) *Queue {
	return &Queue{client: c, reader: reader, pub: pub, clock: clk, timeout: timeout, poll: poll, log: log, running: map[string]bool{}}
}

// Running reports how many commands are waiting for their replacements.
func (q *Queue) Running() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.running)
}

// Wait blocks until every command's goroutine has returned (after ctx ends).
func (q *Queue) Wait() { q.wg.Wait() }

// Start begins cmd. Marking, tainting and launching happen before it returns; the wait for
// the replacements and the deletion of the candidates continue in the background until ctx
// ends (a restarted controller resumes them with Recover).
func (q *Queue) Start(ctx context.Context, cmd *Command) error {
	cmd.ID = cmd.Method + "-" + utilrand.String(8)
	started := q.clock.Now().UTC().Truncate(time.Second)
	for _, cand := range cmd.Candidates {
		if err := q.mark(ctx, cand.NodeClaim, cmd, started); err != nil {
			q.rollback(ctx, cmd.ID, fmt.Sprintf("marking %s failed: %v", cand.Name(), err))
			return err
		}
		if err := q.taint(ctx, cand.Node.Name, true); err != nil {
			q.rollback(ctx, cmd.ID, fmt.Sprintf("tainting node %s failed: %v", cand.Node.Name, err))
			return err
		}
	}
	for i, repl := range cmd.Replacements {
		if repl.Annotations == nil {
			repl.Annotations = map[string]string{}
		}
		repl.Annotations[ReplacementForAnnotationKey] = cmd.ID
		if err := q.client.Create(ctx, repl); err != nil {
			q.rollback(ctx, cmd.ID, fmt.Sprintf("creating replacement %d failed: %v", i, err))
			return fmt.Errorf("creating replacement nodeclaim for %s: %w", cmd, err)
		}
		recordCreated(cmd.Reason, repl)
	}
	for _, cand := range cmd.Candidates {
		if len(cmd.Replacements) > 0 {
			q.pub.publish(cand.NodeClaim, cand.Node, corev1.EventTypeNormal, EventDisruptionLaunching, "Disrupt",
				fmt.Sprintf("Launching NodeClaim: %s", cmd.Reason))
		}
	}
	if len(cmd.Replacements) == 0 {
		return q.terminate(ctx, cmd.ID)
	}
	q.background(ctx, cmd.ID, started)
	return nil
}

// background runs the wait for command id unless it already runs.
func (q *Queue) background(ctx context.Context, id string, started time.Time) {
	q.mu.Lock()
	if q.running[id] {
		q.mu.Unlock()
		return
	}
	q.running[id] = true
	q.mu.Unlock()
	q.wg.Add(1)
	go func() {
		defer q.wg.Done()
		defer func() {
			q.mu.Lock()
			delete(q.running, id)
			q.mu.Unlock()
		}()
		q.waitForReplacements(ctx, id, started)
	}()
}

// members lists the command's candidates and replacements from the API server.
func (q *Queue) members(ctx context.Context, id string) (cands, repls []*karpv1.NodeClaim, err error) {
	var list karpv1.NodeClaimList
	if err := q.reader.List(ctx, &list); err != nil {
		return nil, nil, fmt.Errorf("listing nodeclaims: %w", err)
	}
	for i := range list.Items {
		nc := &list.Items[i]
		switch id {
		case nc.Annotations[CommandAnnotationKey]:
			cands = append(cands, nc)
		case nc.Annotations[ReplacementForAnnotationKey]:
			repls = append(repls, nc)
		}
	}
	return cands, repls, nil
}

// step advances command id once: it reports whether the command is finished (terminated or
// rolled back).
func (q *Queue) step(ctx context.Context, id string, started time.Time, announced *bool) (bool, error) {
	cands, repls, err := q.members(ctx, id)
	if err != nil {
		return false, err
	}
	if len(cands) == 0 {
		return true, nil
	}
	if slices.ContainsFunc(cands, func(nc *karpv1.NodeClaim) bool { return nc.DeletionTimestamp != nil }) {
		// Termination began: finish it.
		return true, q.terminate(ctx, id)
	}
	expected, _ := strconv.Atoi(cands[0].Annotations[ReplacementsAnnotationKey])
	live := 0
	initialized := 0
	for _, r := range repls {
		if r.DeletionTimestamp != nil {
			continue
		}
		live++
		if isInitialized(r) {
			initialized++
		}
	}
	switch {
	case live < expected:
		q.rollbackBackingOff(ctx, id, fmt.Sprintf("%d of %d replacement NodeClaims are gone (launch failed or deleted)", expected-live, expected))
		return true, nil
	case initialized == expected:
		return true, q.terminate(ctx, id)
	case q.clock.Since(started) > replacementTimeout(q.timeout, q.Running()):
		q.rollbackBackingOff(ctx, id, fmt.Sprintf("replacements not initialized within %s", replacementTimeout(q.timeout, q.Running())))
		return true, nil
	}
	if !*announced {
		*announced = true
		for _, nc := range cands {
			q.pub.publish(nc, q.nodeOf(ctx, nc), corev1.EventTypeNormal, EventDisruptionWaitingReadiness, "Disrupt",
				"Waiting on readiness to continue disruption")
		}
	}
	return false, nil
}

func (q *Queue) waitForReplacements(ctx context.Context, id string, started time.Time) {
	announced := false
	for {
		done, err := q.step(ctx, id, started, &announced)
		if err != nil {
			q.log.Error(err, "advancing disruption command", "command", id)
		}
		if done {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-q.clock.After(q.poll):
		}
	}
}

// terminate deletes command id's candidates.
func (q *Queue) terminate(ctx context.Context, id string) error {
	cands, _, err := q.members(ctx, id)
	if err != nil {
		return err
	}
	var errs []error
	for _, nc := range cands {
		if nc.DeletionTimestamp != nil {
			continue
		}
		reason := nc.Annotations[commandReasonAnnotationKey]
		if err := q.client.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting nodeclaim %s: %w", nc.Name, err))
			continue
		}
		RecordDisrupted(reason, nc)
		q.pub.publish(nc, q.nodeOf(ctx, nc), corev1.EventTypeNormal, EventDisruptionTerminating, "Disrupt",
			fmt.Sprintf("Disrupting Node: %s", reason))
	}
	return errors.Join(errs...)
}

// rollback undoes command id: replacements deleted first (so a crash in between leaves
// candidates still marked, and the next Recover finishes the rollback), then candidates
// unmarked and untainted.
func (q *Queue) rollback(ctx context.Context, id, why string) {
	log := q.log.WithValues("command", id)
	log.Info("abandoning disruption command", "why", why)
	cands, repls, err := q.members(ctx, id)
	if err != nil {
		log.Error(err, "rolling back")
		return
	}
	recordQueueFailure(id, cands)
	for _, r := range repls {
		if r.DeletionTimestamp == nil {
			if err := q.client.Delete(ctx, r); client.IgnoreNotFound(err) != nil {
				log.Error(err, "deleting replacement", "nodeclaim", r.Name)
				return
			}
		}
	}
	for _, nc := range cands {
		if nc.DeletionTimestamp != nil {
			continue // already terminating: nothing to undo
		}
		node := q.nodeOf(ctx, nc)
		if node != nil {
			if err := q.taint(ctx, node.Name, false); err != nil {
				log.Error(err, "untainting", "node", node.Name)
				return
			}
		}
		if err := q.unmark(ctx, nc); err != nil {
			log.Error(err, "unmarking", "nodeclaim", nc.Name)
			return
		}
		q.pub.publish(nc, node, corev1.EventTypeWarning, EventDisruptionBlocked, "Disrupt", "Disruption abandoned: "+why)
	}
}

// commandReasonAnnotationKey keeps the disruption reason on a candidate, for the events and
// metrics of a command resumed after a restart.
const commandReasonAnnotationKey = "joinery.dev/disruption-reason"

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
		Reason: cmd.Reason, Message: cmd.String(), LastTransitionTime: now, ObservedGeneration: nc.Generation})
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
	for _, k := range []string{CommandAnnotationKey, StartedAnnotationKey, ReplacementsAnnotationKey, commandReasonAnnotationKey} {
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

// Recover resumes the commands a previous process left on the cluster: a command whose
// candidates are terminating is finished, one whose replacements are incomplete is rolled
// back, one still waiting waits on with its original start time. A disrupted taint on a node
// whose NodeClaim no command holds and that is not being deleted is removed.
func (q *Queue) Recover(ctx context.Context) error {
	var list karpv1.NodeClaimList
	if err := q.reader.List(ctx, &list); err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	started := map[string]time.Time{}
	owned := map[string]bool{} // node names held by a command or terminating
	for i := range list.Items {
		nc := &list.Items[i]
		id := nc.Annotations[CommandAnnotationKey]
		if nc.DeletionTimestamp != nil || id != "" {
			owned[nc.Status.NodeName] = true
		}
		if id == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, nc.Annotations[StartedAnnotationKey])
		if err != nil {
			t = time.Time{} // unknown start: time out at once unless ready
		}
		if prev, ok := started[id]; !ok || t.Before(prev) {
			started[id] = t
		}
	}
	for _, id := range sortedKeys(started) {
		q.log.Info("resuming disruption command", "command", id)
		announced := true
		done, err := q.step(ctx, id, started[id], &announced)
		if err != nil {
			return fmt.Errorf("resuming command %s: %w", id, err)
		}
		if !done {
			q.background(ctx, id, started[id])
		}
	}
	var nodes corev1.NodeList
	if err := q.reader.List(ctx, &nodes); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if hasDisruptedTaint(n) && n.DeletionTimestamp == nil && !owned[n.Name] {
			q.log.Info("removing disrupted taint left by an unfinished command", "node", n.Name)
			if err := q.taint(ctx, n.Name, false); err != nil {
				return err
			}
		}
	}
	return nil
}
