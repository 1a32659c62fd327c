package disruption

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// The replacement wait (Karpenter's): 10 minutes, longer while more commands wait, since their
// replacements launch and initialize together; never more than an hour.
const (
	// ReplacementTimeoutPerCommand is what each other waiting command adds to the wait
	// (joinery's step: Karpenter scales its wait too, by a formula not documented).
	ReplacementTimeoutPerCommand = time.Minute
	MaxReplacementTimeout        = time.Hour
)

// A candidate whose command was rolled back because its replacements failed (gone or never
// initialized) is not disrupted again before its back-off ends: 15 minutes after the first
// rollback, doubling with each rollback up to 4 hours. Kept on the NodeClaim, so a restart keeps
// it. Karpenter has no such back-off; without it the same command starts again at once.
const (
	BackoffAnnotationKey   = "joinery.dev/disruption-backoff-until"
	RollbacksAnnotationKey = "joinery.dev/disruption-rollbacks"
	InitialRollbackBackoff = 15 * time.Minute
	MaxRollbackBackoff     = 4 * time.Hour
)

// replacementTimeout is the wait for a command's replacements with `waiting` commands waiting
// (this one included).
func replacementTimeout(base time.Duration, waiting int) time.Duration {
	return min(base+time.Duration(max(waiting-1, 0))*ReplacementTimeoutPerCommand, max(base, MaxReplacementTimeout))
}

// rollbackBackoff is the back-off after the n-th rollback (n ≥ 1).
func rollbackBackoff(n int) time.Duration {
	d := InitialRollbackBackoff
	for i := 1; i < n && d < MaxRollbackBackoff; i++ {
		d *= 2
	}
	return min(d, MaxRollbackBackoff)
}

// rollbackBackingOff rolls command id back, then backs its candidates off. A failed rollback
// is returned (the queue retries it); a back-off that cannot be recorded is only logged, since
// the command is gone once its rollback is done.
func (q *Queue) rollbackBackingOff(ctx context.Context, id string, m *members, why string) error {
	if err := q.rollback(ctx, id, m, why); err != nil {
		return err
	}
	for _, nc := range m.cands {
		if nc.DeletionTimestamp != nil {
			continue
		}
		if err := q.backOff(ctx, nc.Name); err != nil {
			q.log.Error(err, "recording the disruption back-off", "nodeclaim", nc.Name)
		}
	}
	return nil
}

// backOff records one more rollback on the NodeClaim and when it may be disrupted again.
func (q *Queue) backOff(ctx context.Context, name string) error {
	nc := &karpv1.NodeClaim{}
	if err := q.reader.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
		return client.IgnoreNotFound(err)
	}
	n, _ := strconv.Atoi(nc.Annotations[RollbacksAnnotationKey])
	n++
	until := q.clock.Now().Add(rollbackBackoff(n)).UTC().Truncate(time.Second)
	stored := nc.DeepCopy()
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[RollbacksAnnotationKey] = strconv.Itoa(n)
	nc.Annotations[BackoffAnnotationKey] = until.Format(time.RFC3339)
	if err := q.client.Patch(ctx, nc, client.MergeFrom(stored)); err != nil {
		return fmt.Errorf("recording the back-off on nodeclaim %s: %w", name, err)
	}
	q.pub.publish(nc, q.nodeOf(ctx, nc), corev1.EventTypeWarning, EventDisruptionBlocked, "Disrupt",
		fmt.Sprintf("Cannot disrupt Node: rolled back %d time(s), backing off until %s", n, until.Format(time.RFC3339)))
	return nil
}

// backingOff says until when nc may not be disrupted after a rollback ("" when it may).
func backingOff(nc *karpv1.NodeClaim, now time.Time) string {
	v, ok := nc.Annotations[BackoffAnnotationKey]
	if !ok {
		return ""
	}
	until, err := time.Parse(time.RFC3339, v)
	if err != nil || !now.Before(until) {
		return "" // an unreadable back-off never blocks for good
	}
	return fmt.Sprintf("Cannot disrupt Node: disruption rolled back, backing off until %s", v)
}
