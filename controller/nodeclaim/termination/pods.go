package termination

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/scheduling"
)

// defaultPodTerminationGracePeriod is the API server's default for
// spec.terminationGracePeriodSeconds.
const defaultPodTerminationGracePeriodSeconds int64 = 30

var disruptedTaint = corev1.Taint{Key: karpv1.DisruptedTaintKey, Effect: corev1.TaintEffectNoSchedule}

// drainIgnores reports whether drain neither evicts nor waits for pod: it has finished, is a
// static pod's mirror, or would be scheduled back onto the draining node anyway.
func drainIgnores(pod *corev1.Pod) bool {
	if scheduling.PodFinished(pod) || scheduling.PodIsMirror(pod) {
		return true
	}
	for i := range pod.Spec.Tolerations {
		if pod.Spec.Tolerations[i].ToleratesTaint(klog.Background(), &disruptedTaint, false) {
			return true
		}
	}
	return false
}

// doNotDisrupt reports whether pod opted out of eviction; it still blocks the drain until the
// NodeClaim's terminationGracePeriod ends.
func doNotDisrupt(pod *corev1.Pod) bool {
	return pod.Annotations[karpv1.DoNotDisruptAnnotationKey] == "true"
}

// evictedLast reports whether pod belongs to the last wave of the drain: DaemonSet pods and
// system-critical pods keep serving (logging, networking, DNS) the pods evicted before them.
func evictedLast(pod *corev1.Pod) bool {
	switch pod.Spec.PriorityClassName {
	case "system-cluster-critical", "system-node-critical":
		return true
	}
	return scheduling.PodOwnedByDaemonSet(pod)
}

// podTerminationGracePeriodSeconds is how long pod asked to be given to stop.
func podTerminationGracePeriodSeconds(pod *corev1.Pod) int64 {
	if pod.Spec.TerminationGracePeriodSeconds == nil {
		return defaultPodTerminationGracePeriodSeconds
	}
	return *pod.Spec.TerminationGracePeriodSeconds
}
