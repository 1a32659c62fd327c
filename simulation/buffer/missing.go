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

// Workload is a controller (a ReplicaSet, a StatefulSet, a Job) that will create more pods
// than exist: Missing replicas of Template, or, for a controller whose pods have an identity,
// the Replicas listed.
type Workload struct {
	// Ref is the workload as its pods' controller reference names it.
	Ref       metav1.OwnerReference
	Namespace string
	Template  *corev1.PodTemplateSpec
	Missing   int32
	// Replicas, when set, are the missing replicas one by one (a StatefulSet's ordinals, an
	// Indexed Job's completion indexes) and Missing is ignored.
	Replicas []Replica
}

// Replica is one missing replica of a workload whose pods have an identity.
type Replica struct {
	// Index is the replica's ordinal or completion index: its virtual pod's name and UID
	// derive from it, so the same replica is the same virtual pod from batch to batch.
	Index int
	// Volumes are added to the template's: the replica's own PersistentVolumeClaims, which
	// exist, so the simulation's volume Filters place it where they can be used.
	Volumes []corev1.Volume
}

// count is how many replicas w misses.
func (w *Workload) count() int {
	if w.Replicas != nil {
		return len(w.Replicas)
	}
	return int(max(w.Missing, 0))
}

// replica returns the i-th missing replica of w (0 <= i < count).
func (w *Workload) replica(i int) Replica {
	if w.Replicas != nil {
		return w.Replicas[i]
	}
	return Replica{Index: i}
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
		n := min(w.count(), limit-len(pods))
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
			r := w.replica(i)
			replicaSpec := &spec
			if len(r.Volumes) > 0 {
				replicaSpec = spec.DeepCopy()
				replicaSpec.Volumes = append(replicaSpec.Volumes, r.Volumes...)
			}
			pods = append(pods, virtualPod(fmt.Sprintf("%s-missing-%d", owner.Name, r.Index), w.Namespace, ReplicaUID(owner.UID, r.Index), labels,
				map[string]string{ReplicaAnnotationKey: value}, owner, replicaSpec))
		}
	}
	return pods
}

// ReplicaUID derives a missing replica's UID from the workload's UID and a replica index, in a
// name space apart from the buffers' (uid).
func ReplicaUID(workload types.UID, index int) types.UID {
	return derivedUID(fmt.Sprintf("joinery.dev/missing-replica/%s/%d", workload, index))
}
