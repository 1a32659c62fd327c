package termination

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// PodNodeNameField indexes Pods by spec.nodeName, so a drain lists only its node's pods.
const PodNodeNameField = "termination.spec.nodeName"

// podNodeName is the PodNodeNameField indexer.
func podNodeName(obj client.Object) []string {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName == "" {
		return nil
	}
	return []string{pod.Spec.NodeName}
}

// drainPollInterval re-checks a drain that waits for pods to terminate.
const drainPollInterval = 5 * time.Second

// drainer empties a terminating Node of its pods, gracefully through the Eviction API until
// the NodeClaim's terminationGracePeriod forces deletions. It keeps no state of its own beyond
// eviction backoff: every call reads the node, the NodeClaim's deadline and the pods afresh.
type drainer struct {
	client   client.Client
	recorder events.EventRecorder
	clock    clock.PassiveClock
	backoff  *backoff
}

// drain advances the drain of node, whose NodeClaim is nc (nil if gone). It returns 0 once
// the node is drained, or how long to wait before looking again.
func (d *drainer) drain(ctx context.Context, node *corev1.Node, nc *karpv1.NodeClaim) (time.Duration, error) {
	if err := d.taint(ctx, node); err != nil {
		return 0, err
	}
	now := d.clock.Now()
	deadline, bounded, err := drainDeadline(ctx, d.client, nc, now)
	if err != nil {
		return 0, err
	}
	pods := &corev1.PodList{}
	if err := d.client.List(ctx, pods, client.MatchingFields{PodNodeNameField: node.Name}); err != nil {
		return 0, fmt.Errorf("listing pods of node %s: %w", node.Name, err)
	}

	var first, last []*corev1.Pod // pods the drain waits for, by eviction wave
	var nextForced time.Time      // earliest future forced deletion
	for i := range pods.Items {
		pod := &pods.Items[i]
		if drainIgnores(pod) {
			continue
		}
		if bounded && pod.DeletionTimestamp.IsZero() {
			at := forceDeleteAt(pod, deadline)
			if !now.Before(at) {
				if err := d.forceDelete(ctx, node, pod, deadline); err != nil {
					return 0, err
				}
				continue
			}
			if nextForced.IsZero() || at.Before(nextForced) {
				nextForced = at
			}
		}
		if evictedLast(pod) {
			last = append(last, pod)
		} else {
			first = append(first, pod)
		}
	}
	if bounded && !now.Before(deadline) {
		// Everything left has been deleted; the node's time is up whether or not pods have gone.
		d.backoff.reset(node.Name)
		return 0, nil
	}
	if len(first) == 0 && len(last) == 0 {
		d.backoff.reset(node.Name)
		return 0, nil
	}

	wave := first
	if len(first) == 0 {
		wave = last
	}
	blocked, err := d.evictAll(ctx, node, wave, disruptionReason(nc))
	if err != nil {
		return 0, err
	}
	wait := drainPollInterval
	if blocked {
		wait = d.backoff.next(node.Name)
	} else {
		d.backoff.reset(node.Name)
	}
	if !nextForced.IsZero() {
		wait = min(wait, max(nextForced.Sub(now), time.Second))
	}
	return wait, nil
}

// taint adds karpenter.sh/disrupted:NoSchedule to node so that no new pod lands on it.
func (d *drainer) taint(ctx context.Context, node *corev1.Node) error {
	if slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&disruptedTaint) }) {
		return nil
	}
	stored := node.DeepCopy()
	node.Spec.Taints = append(node.Spec.Taints, disruptedTaint)
	if err := d.client.Patch(ctx, node, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("tainting node %s: %w", node.Name, err)
	}
	d.recorder.Eventf(node, nil, corev1.EventTypeNormal, "Draining", "Drain", "Draining node")
	return nil
}

// evictAll evicts the pods of one wave that may be evicted and reports whether any eviction
// was refused by a PodDisruptionBudget or the do-not-disrupt annotation. reason is the
// NodeClaim's disruption reason, for karpenter_pods_drained_total.
func (d *drainer) evictAll(ctx context.Context, node *corev1.Node, pods []*corev1.Pod, reason string) (bool, error) {
	blocked := false
	for _, pod := range pods {
		if !pod.DeletionTimestamp.IsZero() {
			continue // already terminating: wait for it
		}
		if doNotDisrupt(pod) {
			blocked = true
			d.recorder.Eventf(node, pod, corev1.EventTypeWarning, "FailedDraining", "Evict",
				"Pod %s/%s has %q annotation and is not evicted", pod.Namespace, pod.Name, karpv1.DoNotDisruptAnnotationKey)
			continue
		}
		eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}}
		err := d.client.SubResource("eviction").Create(ctx, pod, eviction)
		evictionRequests.WithLabelValues(evictionCode(err)).Inc()
		switch {
		case err == nil:
			podsDrained.WithLabelValues(reason).Inc()
			log.FromContext(ctx).Info("evicted pod", "Pod", client.ObjectKeyFromObject(pod))
			d.recorder.Eventf(node, pod, corev1.EventTypeNormal, "Evicted", "Evict", "Evicted pod %s/%s", pod.Namespace, pod.Name)
		case apierrors.IsNotFound(err):
			// Gone already.
		case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
			// The namespace is being deleted: the API server refuses evictions there and the
			// namespace controller deletes the pod itself, so the drain only waits for it.
			log.FromContext(ctx).V(1).Info("pod's namespace is terminating; waiting for its deletion", "Pod", client.ObjectKeyFromObject(pod))
		case apierrors.IsTooManyRequests(err):
			blocked = true
			d.recorder.Eventf(node, pod, corev1.EventTypeWarning, "FailedDraining", "Evict",
				"Pod %s/%s not evicted, blocked by a PodDisruptionBudget: %v", pod.Namespace, pod.Name, err)
		default:
			return false, fmt.Errorf("evicting pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	return blocked, nil
}

// forceDelete deletes pod regardless of PDBs and do-not-disrupt: the node's
// terminationGracePeriod leaves it no more time.
func (d *drainer) forceDelete(ctx context.Context, node *corev1.Node, pod *corev1.Pod, deadline time.Time) error {
	if err := d.client.Delete(ctx, pod); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	log.FromContext(ctx).Info("deleted pod at terminationGracePeriod", "Pod", client.ObjectKeyFromObject(pod), "deadline", deadline)
	d.recorder.Eventf(node, pod, corev1.EventTypeWarning, "Deleted", "Delete",
		"Deleted pod %s/%s: the node's terminationGracePeriod ends at %s", pod.Namespace, pod.Name, deadline.Format(time.RFC3339))
	return nil
}
