package plugin

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
)

var _ fwk.PreFilterPlugin = &Plugin{}

// launchState is what the plugin knows of a NodeClaim its pods wait for.
type launchState struct {
	nodeName    string // the registered node, once there is one
	initialized bool
	taints      []corev1.Taint // the NodeClaim's own taints, which its node keeps
}

// PreFilter holds a pod that waits for a NodeClaim to that NodeClaim's node. kube-scheduler
// would otherwise bind it to whichever new node became ready first — often one planned for
// another pod, which then finds its own node taken and buys more capacity while the node
// planned for the first stands empty. Until the node registers, the pod is not schedulable at
// all; once it is initialized and the pod still does not fit, PostFilter plans it again.
func (p *Plugin) PreFilter(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	p.mu.Lock()
	defer p.mu.Unlock()
	nodeClaim, ok := p.waits.nodeClaimFor(pod.UID)
	if !ok {
		return nil, nil
	}
	state := p.launches[nodeClaim]
	if state.nodeName == "" {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, waitingMessage(nodeClaim))
	}
	return &fwk.PreFilterResult{NodeNames: sets.New(state.nodeName)}, nil
}

// PreFilterExtensions implements fwk.PreFilterPlugin; the pin does not depend on other pods.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }
