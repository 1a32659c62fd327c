package plugin

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// run plans a batch whenever the batcher closes a window, until ctx ends. It starts only once
// synced reports the NodeClaims and pods are known, so that after a restart pods already
// planned onto a launching NodeClaim are not planned again.
func (p *Plugin) run(ctx context.Context, synced func(context.Context) bool) {
	if !synced(ctx) {
		return
	}
	for p.batcher.Wait(ctx) {
		p.provisionBatch(ctx)
	}
}

// provisionBatch hands the pending pods to the planner and publishes its plan.
func (p *Plugin) provisionBatch(ctx context.Context) {
	logger := klog.FromContext(ctx)
	pods := p.takeBatch()
	if len(pods) == 0 {
		return
	}
	start := p.clock.Now()
	plan, err := p.planner.Plan(ctx, pods)
	if err != nil {
		// The pods stay pending; their next scheduling attempt triggers another batch.
		logger.Error(err, "planning capacity failed", "pods", len(pods))
		return
	}
	logger.Info("found provisionable pod(s)", "Pods", formatPods(pods), "duration", p.clock.Since(start))
	p.publish(ctx, pods, plan)
}

// takeBatch returns the pending pods as they are now: it drops pods that were deleted,
// recreated, bound or planned meanwhile.
func (p *Plugin) takeBatch() []*corev1.Pod {
	p.mu.Lock()
	defer p.mu.Unlock()
	var pods []*corev1.Pod
	for _, entry := range p.pending.list() {
		pod, err := p.pods.Pods(entry.namespace).Get(entry.name)
		_, waiting := p.waits.nodeClaimFor(entry.uid)
		if err != nil || pod.UID != entry.uid || pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || podFinished(pod) || waiting {
			p.pending.remove(entry.uid)
			continue
		}
		pods = append(pods, pod)
	}
	return pods
}
