package plugin

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/joinery-dev/joinery/apis/karpenter/v1alpha1"
)

// overlayHandler retries the pods the last plans could not place whenever a NodeOverlay's spec
// changes: an overlay can add the capacity or change the prices they were planned against, and
// kube-scheduler knows no cluster event for it, so without this they would wait for its
// periodic flush of unschedulable pods.
func (p *Plugin) overlayHandler(ctx context.Context) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(_ any, isInInitialList bool) {
			if !isInInitialList {
				p.retryUnschedulable(ctx, "NodeOverlay added")
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			old, okOld := oldObj.(*v1alpha1.NodeOverlay)
			updated, okNew := newObj.(*v1alpha1.NodeOverlay)
			if okOld && okNew && old.Generation == updated.Generation {
				return // status only
			}
			p.retryUnschedulable(ctx, "NodeOverlay changed")
		},
		DeleteFunc: func(any) { p.retryUnschedulable(ctx, "NodeOverlay deleted") },
	}
}

// retryUnschedulable activates every pod the last plans left unschedulable.
func (p *Plugin) retryUnschedulable(ctx context.Context, why string) {
	p.mu.Lock()
	uids := make([]types.UID, 0, len(p.unschedulable))
	for uid := range p.unschedulable {
		uids = append(uids, uid)
	}
	p.mu.Unlock()
	if len(uids) == 0 {
		return
	}
	klog.FromContext(ctx).V(2).Info("retrying unschedulable pods", "reason", why, "pods", len(uids))
	p.activateUIDs(ctx, uids...)
}
