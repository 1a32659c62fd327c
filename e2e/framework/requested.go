package framework

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/joinery-dev/joinery/scheduling"
)

// RequestedShares returns, for each node that has allocatable cpu or memory, the share of it
// the pods bound there request: the larger of the cpu and the memory share, so a node full of
// memory-heavy pods is not counted as idle. Finished pods request nothing.
func RequestedShares(nodes []corev1.Node, pods []corev1.Pod) map[string]float64 {
	requested := map[string]corev1.ResourceList{}
	for i := range pods {
		pod := &pods[i]
		if pod.Spec.NodeName == "" || scheduling.PodFinished(pod) {
			continue
		}
		requested[pod.Spec.NodeName] = scheduling.Merge(requested[pod.Spec.NodeName], scheduling.PodRequests(pod))
	}
	out := map[string]float64{}
	for _, node := range nodes {
		share, known := 0.0, false
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			alloc := node.Status.Allocatable[name]
			if alloc.IsZero() {
				continue
			}
			known = true
			used := requested[node.Name][name]
			share = max(share, float64(used.MilliValue())/float64(alloc.MilliValue()))
		}
		if known {
			out[node.Name] = share
		}
	}
	return out
}
