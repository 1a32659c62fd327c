package plugin

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/joinery-dev/joinery/scheduling"
)

// backlogTimeout bounds how long a new leader holds its first batch for the backlog.
const backlogTimeout = time.Minute

// awaitBacklog holds the first batch of a process that starts to lead (a standby taking over,
// or a scheduler restarted) until kube-scheduler has tried each pod it found waiting: those
// the previous leader left Unschedulable and those it never reached. kube-scheduler goes
// through that backlog one pod at a time; on a loaded machine the gaps between two
// PostFilters outlast BatchIdleDuration, and the backlog would be planned in fragments, each
// buying nodes the whole backlog would have shared. The wait ends when every backlog pod is
// pending, waiting for a NodeClaim, bound or gone; or when none of them moved for
// BatchMaxDuration (a pod kube-scheduler never brings to PostFilter, say one whose PreFilter
// is unresolvable); or after backlogTimeout.
func (p *Plugin) awaitBacklog(ctx context.Context) {
	backlog := p.backlog()
	if len(backlog) == 0 {
		return
	}
	logger := klog.FromContext(ctx)
	logger.Info("waiting for the scheduling queue to try the pods left unscheduled before planning them as one batch", "pods", len(backlog))
	start, moved, left := p.clock.Now(), p.clock.Now(), len(backlog)
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, backlogTimeout, true, func(context.Context) (bool, error) {
		p.dropTried(backlog)
		if len(backlog) < left {
			left, moved = len(backlog), p.clock.Now()
		}
		return len(backlog) == 0 || p.clock.Since(moved) > p.args.BatchMaxDuration.Duration, nil
	})
	if ctx.Err() != nil {
		return
	}
	if err != nil || len(backlog) > 0 {
		logger.Info("planning before the scheduling queue tried every pod of the backlog", "untried", len(backlog), "waited", p.clock.Since(start))
		return
	}
	logger.Info("the scheduling queue tried the backlog", "waited", p.clock.Since(start))
}

// backlog returns the pods, by UID, kube-scheduler is to try for this leader: unbound pods of
// a served schedulerName that wait for no NodeClaim, whether a scheduler already found them
// Unschedulable or never tried them. A pod the previous leader never reached is as much a
// part of the backlog as one it refused: leaving it out would plan it in a second batch.
// Gated pods are left out: kube-scheduler does not try them until their gates are removed.
func (p *Plugin) backlog() map[types.UID]types.NamespacedName {
	if p.pods == nil {
		return nil
	}
	pods, err := p.pods.List(labels.Everything())
	if err != nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[types.UID]types.NamespacedName{}
	for _, pod := range pods {
		if !p.names.Has(pod.Spec.SchedulerName) || pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || scheduling.PodFinished(pod) || len(pod.Spec.SchedulingGates) > 0 {
			continue
		}
		if _, waiting := p.waits.nodeClaimFor(pod.UID); waiting || p.pending.has(pod.UID) {
			continue
		}
		out[pod.UID] = types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	}
	return out
}

// dropTried removes from backlog the pods that no longer await their attempt: pending (their
// PostFilter ran), waiting for a NodeClaim, quarantined, bound, or gone.
func (p *Plugin) dropTried(backlog map[types.UID]types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for uid, ref := range backlog {
		_, waiting := p.waits.nodeClaimFor(uid)
		if waiting || p.pending.has(uid) {
			delete(backlog, uid)
			continue
		}
		if _, ok := p.quarantined[uid]; ok {
			delete(backlog, uid)
			continue
		}
		pod, err := p.pods.Pods(ref.Namespace).Get(ref.Name)
		if err != nil || pod.UID != uid || pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || scheduling.PodFinished(pod) {
			delete(backlog, uid)
		}
	}
}
