package buffer

import (
	"crypto/sha1"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	autoscalingv1alpha1 "github.com/joinery-dev/joinery/apis/autoscaling/v1alpha1"
)

// AnnotationKey names a virtual pod's buffer (namespace/name). It is only a label for
// grouping: any pod author can put it on a real pod, so it never decides what a pod is.
const AnnotationKey = "joinery.dev/capacity-buffer"

// IsVirtual reports whether pod is a virtual pod: a buffer's, or a replica its workload has
// not created yet (MissingReplicas). The proof is its UID: a virtual pod's is derived from its
// controller's UID and its index (the suffix of its name), while the API server assigns every
// real pod a random UID on create and ignores one the client sets. So a real pod that copies
// the annotation, the owner reference and the name is still real, and keeps its
// do-not-disrupt and PDB protections.
func IsVirtual(pod *corev1.Pod) bool {
	owner := metav1.GetControllerOfNoCopy(pod)
	if owner == nil {
		return false
	}
	index, ok := VirtualIndex(pod)
	if !ok {
		return false
	}
	if isBufferRef(owner) {
		_, ok := pod.Annotations[AnnotationKey]
		return ok && pod.UID == uid(owner.UID, index)
	}
	_, ok = pod.Annotations[ReplicaAnnotationKey]
	return ok && pod.UID == ReplicaUID(owner.UID, index)
}

// MissingReplicaOf returns the controller's UID and the replica's index when pod is the
// virtual pod of a missing replica (MissingReplicas); ok is false for any other pod, a
// buffer's virtual pods included.
func MissingReplicaOf(pod *corev1.Pod) (workload types.UID, index int, ok bool) {
	owner := metav1.GetControllerOfNoCopy(pod)
	if owner == nil || isBufferRef(owner) || !IsVirtual(pod) {
		return "", 0, false
	}
	index, _ = VirtualIndex(pod)
	return owner.UID, index, true
}

// VirtualIndex returns the index a virtual pod's name ends with (its replica's, or its
// buffer's), which its UID derives from; ok is false for a name without one.
func VirtualIndex(pod *corev1.Pod) (int, bool) {
	i := strings.LastIndexByte(pod.Name, '-')
	if i < 0 {
		return 0, false
	}
	index, err := strconv.Atoi(pod.Name[i+1:])
	if err != nil || index < 0 {
		return 0, false
	}
	return index, true
}

func isBufferRef(owner *metav1.OwnerReference) bool {
	return owner.Kind == "CapacityBuffer" && owner.APIVersion == autoscalingv1alpha1.SchemeGroupVersion.String()
}

// Of returns the buffer (namespace/name) a virtual pod belongs to, "" for a real pod or a
// missing replica.
func Of(pod *corev1.Pod) string {
	if !IsVirtual(pod) || !isBufferRef(metav1.GetControllerOfNoCopy(pod)) {
		return ""
	}
	return pod.Annotations[AnnotationKey]
}

// VirtualPods returns count pods shaped like template for buffer b. Each has a deterministic
// UID derived from the buffer's UID and its index, so the same buffer gives the same pods on
// every call and in both binaries; the buffer is their controller (one equivalence class).
// What would make the simulation depend on objects a pod creates for itself is removed:
// PersistentVolumeClaims and generic ephemeral volumes (a chunk is capacity, not storage),
// ResourceClaims, a nodeName and scheduling gates.
func VirtualPods(b *autoscalingv1alpha1.CapacityBuffer, template *corev1.PodTemplateSpec, count int32) []*corev1.Pod {
	if count <= 0 || template == nil {
		return nil
	}
	spec := sanitize(template.Spec)
	labels := make(map[string]string, len(template.Labels))
	for k, v := range template.Labels {
		labels[k] = v
	}
	controller := true
	owner := metav1.OwnerReference{
		APIVersion: autoscalingv1alpha1.SchemeGroupVersion.String(),
		Kind:       "CapacityBuffer",
		Name:       b.Name,
		UID:        b.UID,
		Controller: &controller,
	}
	key := b.Namespace + "/" + b.Name
	pods := make([]*corev1.Pod, count)
	for i := range pods {
		pods[i] = virtualPod(fmt.Sprintf("capacitybuffer-%s-%d", b.Name, i), b.Namespace, uid(b.UID, i), labels,
			map[string]string{AnnotationKey: key}, owner, &spec)
	}
	return pods
}

// virtualPod is one virtual pod: what VirtualPods and MissingReplicas share.
func virtualPod(name, namespace string, uid types.UID, labels, annotations map[string]string, owner metav1.OwnerReference, spec *corev1.PodSpec) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       namespace,
			UID:             uid,
			Labels:          labels,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Spec:   *spec.DeepCopy(),
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

// sanitize returns a copy of spec fit for a pod that is never created.
func sanitize(in corev1.PodSpec) corev1.PodSpec {
	spec := *in.DeepCopy()
	spec.NodeName = ""
	spec.SchedulingGates = nil
	spec.ResourceClaims = nil
	var volumes []corev1.Volume
	for _, v := range spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			continue
		}
		volumes = append(volumes, v)
	}
	spec.Volumes = volumes
	for _, containers := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range containers {
			containers[i].Resources.Claims = nil
		}
	}
	return spec
}

// uid derives a buffer's virtual pod UID from the buffer's UID and a pod index.
func uid(buffer types.UID, index int) types.UID {
	return derivedUID(fmt.Sprintf("joinery.dev/capacity-buffer/%s/%d", buffer, index))
}

// derivedUID is a name-based (version 5 layout) UUID of name.
func derivedUID(name string) types.UID {
	sum := sha1.Sum([]byte(name))
	sum[6] = (sum[6] & 0x0f) | 0x50
	sum[8] = (sum[8] & 0x3f) | 0x80
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16]))
}
