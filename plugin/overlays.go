package plugin

import (
	"context"

	"k8s.io/client-go/tools/cache"

	"github.com/joinery-dev/joinery/apis/karpenter/v1alpha1"
	"github.com/joinery-dev/joinery/cloudprovider"
)

// overlayHandler plans the pods the last plans refused again whenever a NodeOverlay's spec or
// devices annotation changes: an overlay can add the capacity or devices or change the prices
// they were planned against, and kube-scheduler knows no cluster event for it.
func (p *Plugin) overlayHandler(ctx context.Context) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(_ any, isInInitialList bool) {
			if !isInInitialList {
				p.replanRefused(ctx, "NodeOverlay added", nil)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			old, okOld := oldObj.(*v1alpha1.NodeOverlay)
			updated, okNew := newObj.(*v1alpha1.NodeOverlay)
			if okOld && okNew && !cloudprovider.OverlayChanged(old, updated) {
				return // status only
			}
			p.replanRefused(ctx, "NodeOverlay changed", nil)
		},
		DeleteFunc: func(any) { p.replanRefused(ctx, "NodeOverlay deleted", nil) },
	}
}
