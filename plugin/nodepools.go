package plugin

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/simulation"
)

// reasonNoCompatibleInstanceTypes is Karpenter's event reason on a NodePool that can serve no
// pod because its requirements filter out every instance type.
const reasonNoCompatibleInstanceTypes = "NoCompatibleInstanceTypes"

// Karpenter's messages for the event: a misconfigured NodePool and a temporary lack of
// capacity both leave pods pending, and only this event tells them apart.
const (
	noCompatibleMessage          = "NodePool requirements filtered out all compatible available instance types"
	noCompatibleMinValuesMessage = noCompatibleMessage + " due to minValues incompatibility"
)

// reportIncompatible tells each NodePool the plan found without a compatible instance type,
// on every batch that plans: the recorder (internal/eventlimit) drops the repeats.
func (p *Plugin) reportIncompatible(ctx context.Context, incompatible []simulation.IncompatibleNodePool) {
	for _, in := range incompatible {
		klog.FromContext(ctx).V(1).Info("skipping, nodepool requirements filtered out all instance types",
			"NodePool", klog.KRef("", in.NodePool.Name), "minValues", in.MinValues)
		if p.recorder == nil {
			continue
		}
		msg := noCompatibleMessage
		if in.MinValues {
			msg = noCompatibleMinValuesMessage
		}
		// The recorder resolves the reference from the object's kind: NodePools from the
		// cache carry none.
		ref := in.NodePool.DeepCopy()
		ref.APIVersion, ref.Kind = karpv1.SchemeGroupVersion.String(), "NodePool"
		p.recorder.Eventf(ref, nil, corev1.EventTypeWarning, reasonNoCompatibleInstanceTypes, "Provision", msg)
	}
}
