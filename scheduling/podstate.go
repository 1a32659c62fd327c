package scheduling

import corev1 "k8s.io/api/core/v1"

// The pod predicates every binary shares: the scheduler's backlog, the controller's candidates,
// drain and metrics, the simulation's snapshot and the CLI all ask these questions of a pod,
// and must get the same answers.

// PodFinished reports whether pod has run to completion (Succeeded or Failed): it holds no
// resources, needs no node and blocks no drain.
func PodFinished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// PodOwnedByDaemonSet reports whether a DaemonSet controls pod: it runs on every node that
// admits it, so it neither moves with its node nor needs a place elsewhere.
func PodOwnedByDaemonSet(pod *corev1.Pod) bool {
	for _, ref := range pod.OwnerReferences {
		if ref.Kind == "DaemonSet" && ref.Controller != nil && *ref.Controller {
			return true
		}
	}
	return false
}

// PodIsMirror reports whether pod is the API server's mirror of a static pod: the kubelet owns
// it, nothing can evict or reschedule it.
func PodIsMirror(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[corev1.MirrorPodAnnotationKey]
	return ok
}
