package solver

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/joinery-dev/joinery/simulation"
)

// poolReason is why NodePool name cannot host a pod, worded "nodepool "name": message".
func poolReason(name string, kind simulation.ReasonKind, message string) simulation.NodePoolReason {
	return simulation.NodePoolReason{NodePool: name, Kind: kind, Message: message, Text: fmt.Sprintf("nodepool %q: %s", name, message)}
}

// skippedPool is why NodePool name is skipped, worded "nodepool "name"" sep message.
func skippedPool(name, message, sep string) simulation.NodePoolReason {
	return simulation.NodePoolReason{NodePool: name, Kind: simulation.ReasonNotReady, Message: message, Text: fmt.Sprintf("nodepool %q%s%s", name, sep, message)}
}

// noPoolReady is the reason when no NodePool is ready at all.
var noPoolReady = simulation.NodePoolReason{Kind: simulation.ReasonNotReady, Message: "no NodePool is ready", Text: "no NodePool is ready"}

// unschedulable records that pod fits no NodePool, for reasons: structured in Plan.Reasons,
// and joined into the text of Plan.Unschedulable the user reads.
func (r *run) unschedulable(pod *corev1.Pod, reasons []simulation.NodePoolReason) {
	texts := make([]string, len(reasons))
	for i, reason := range reasons {
		texts[i] = reason.Text
	}
	r.plan.Unschedulable[pod.UID] = "no NodePool fits: " + strings.Join(texts, "; ")
	r.plan.Reasons[pod.UID] = reasons
}

// settle drops the reasons of pod's last round: it is tried again.
func (r *run) settle(pod *corev1.Pod) {
	delete(r.plan.Unschedulable, pod.UID)
	delete(r.plan.Reasons, pod.UID)
}
