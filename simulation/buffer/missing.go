package buffer

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ReplicaAnnotationKey marks a missing replica's virtual pod; its value names the workload
// (Kind/namespace/name). Like AnnotationKey it only labels: the UID proves the pod virtual.
const ReplicaAnnotationKey = "joinery.dev/missing-replica-of"

// Workload is a controller (a ReplicaSet) that will create more pods than exist: Missing
// replicas of Template.
type Workload struct {
	// Ref is the workload as its pods' controller reference names it.
	Ref       metav1.OwnerReference
	Namespace string
	Template  *corev1.PodTemplateSpec
	Missing   int32
}

// Plannable reports whether a workload's missing replicas can be planned before they exist:
// a replica whose template makes per-pod objects (PersistentVolumeClaims, ephemeral volumes,
// ResourceClaims) or that is gated waits to be created, since where it fits depends on them.
func Plannable(template *corev1.PodTemplateSpec) bool {
	if template == nil || len(template.Spec.ResourceClaims) > 0 || len(template.Spec.SchedulingGates) > 0 || template.Spec.NodeName != "" {
		return false
	}
	for _, v := range template.Spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			return false
		}
	}
	return true
}

// MissingReplicas returns virtual pods for the replicas the workloads will create but have
// not yet, in the workloads' order, at most limit in all (what MaxVirtualPods leaves after
// the buffers). Each is the workload's template with the workload as controller, so it is in
// the real replicas' equivalence class and matches their spread and affinity selectors; its
// UID is derived from the workload's UID and its index, so a batch that plans the same
// workload again gets the same pods, and NodeClaims planned for them are recognised.
func MissingReplicas(workloads []Workload, limit int) []*corev1.Pod {
	var pods []*corev1.Pod
	for _, w := range workloads {
		n := min(int(w.Missing), limit-len(pods))
		if n <= 0 || !Plannable(w.Template) {
			continue
		}
		spec := sanitize(w.Template.Spec)
		labels := make(map[string]string, len(w.Template.Labels))
		for k, v := range w.Template.Labels {
			labels[k] = v
		}
		owner := w.Ref
		controller := true
		owner.Controller = &controller
		owner.BlockOwnerDeletion = nil
		value := fmt.Sprintf("%s/%s/%s", owner.Kind, w.Namespace, owner.Name)
		for i := range n {
			pods = append(pods, virtualPod(fmt.Sprintf("%s-missing-%d", owner.Name, i), w.Namespace, replicaUID(owner.UID, i), labels,
				map[string]string{ReplicaAnnotationKey: value}, owner, &spec))
		}
	}
	return pods
}

// replicaUID derives a missing replica's UID from the workload's UID and a replica index, in a
// name space apart from the buffers' (uid).
func replicaUID(workload types.UID, index int) types.UID {
	return derivedUID(fmt.Sprintf("joinery.dev/missing-replica/%s/%d", workload, index))
}
