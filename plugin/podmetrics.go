package plugin

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/joinery-dev/joinery/scheduling"
)

// podTimes follows each pod from when the plugin first saw it need capacity, through the plan
// that first gave it a NodeClaim (when Karpenter "first thinks the pod can schedule"), to its
// binding and start, for the karpenter_pods_* provisioning metrics. It keeps its own lock: the
// informer's handlers and the batch loop update it.
type podTimes struct {
	mu   sync.Mutex
	pods map[types.UID]*podTime
}

type podTime struct {
	name, namespace string
	seen, tried     time.Time // first pending; first in a batch
	decided         time.Time // first planned onto a NodeClaim
	bound           bool
}

func newPodTimes() *podTimes { return &podTimes{pods: map[types.UID]*podTime{}} }

func (t *podTimes) labels(p *podTime) map[string]string {
	return map[string]string{"name": p.name, "namespace": p.namespace}
}

// seen records that pod needs capacity, at now, unless it was seen before.
func (t *podTimes) seen(pod *corev1.Pod, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.pods[pod.UID]; !ok {
		t.pods[pod.UID] = &podTime{name: pod.Name, namespace: pod.Namespace, seen: now}
	}
}

// tried records that a batch with pods began at now: the first try observes the time from
// being seen to being tried.
func (t *podTimes) tried(pods []*corev1.Pod, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, pod := range pods {
		if p, ok := t.pods[pod.UID]; ok && p.tried.IsZero() {
			p.tried = now
			podSchedulingDecision.Observe(now.Sub(p.seen).Seconds())
		}
	}
}

// decided records that a plan gave uids a NodeClaim at now.
func (t *podTimes) decided(uids []types.UID, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, uid := range uids {
		if p, ok := t.pods[uid]; ok && p.decided.IsZero() {
			p.decided = now
			podUndecided.Delete(t.labels(p))
		}
	}
}

// observe follows pod's binding and start; a pod that runs (or ends) is forgotten.
func (t *podTimes) observe(pod *corev1.Pod) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.pods[pod.UID]
	if !ok {
		return
	}
	if pod.DeletionTimestamp != nil || scheduling.PodFinished(pod) {
		t.forgetLocked(pod.UID)
		return
	}
	if scheduled := podCondition(pod, corev1.PodScheduled); !p.bound && pod.Spec.NodeName != "" && scheduled != nil && scheduled.Status == corev1.ConditionTrue {
		p.bound = true
		podUndecided.Delete(t.labels(p))
		podProvisioningUnbound.Delete(t.labels(p))
		if !p.decided.IsZero() {
			podProvisioningBound.Observe(scheduled.LastTransitionTime.Sub(p.decided).Seconds())
		}
	}
	if ready := podCondition(pod, corev1.PodReady); ready != nil && ready.Status == corev1.ConditionTrue {
		if !p.decided.IsZero() {
			podProvisioningStartup.Observe(ready.LastTransitionTime.Sub(p.decided).Seconds())
		}
		t.forgetLocked(pod.UID)
	}
}

// forget drops a deleted pod.
func (t *podTimes) forget(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forgetLocked(uid)
}

func (t *podTimes) forgetLocked(uid types.UID) {
	p, ok := t.pods[uid]
	if !ok {
		return
	}
	for _, g := range []interface{ Delete(map[string]string) bool }{podUndecided, podProvisioningUnbound, podProvisioningUnstarted} {
		g.Delete(t.labels(p))
	}
	delete(t.pods, uid)
}

// refresh sets the waiting-time gauges at now.
func (t *podTimes) refresh(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.pods {
		switch {
		case p.decided.IsZero():
			podUndecided.With(t.labels(p)).Set(now.Sub(p.seen).Seconds())
		default:
			if !p.bound {
				podProvisioningUnbound.With(t.labels(p)).Set(now.Sub(p.decided).Seconds())
			}
			podProvisioningUnstarted.With(t.labels(p)).Set(now.Sub(p.decided).Seconds())
		}
	}
}

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}
