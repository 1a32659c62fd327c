package buffer

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	autoscalingv1alpha1 "github.com/joinery-dev/joinery/apis/autoscaling/v1alpha1"
)

// TemplateGetter returns the PodTemplate namespace/name, or nil when there is none.
type TemplateGetter func(namespace, name string) *corev1.PodTemplate

// MaxVirtualPods is how many virtual pods joinery builds across all buffers in one pass, in
// joinery-scheduler and joinery-controller alike: each is a whole pod (about 3 KiB) simulated on
// every pass, so no buffer, however large its spec.replicas or the workload its percentage
// follows, can exhaust either binary's memory. Older buffers are served first.
const MaxVirtualPods = 1000

// ReasonVirtualPodCapExceeded is ReadyForProvisioning=False on a buffer that MaxVirtualPods
// cuts: older buffers take part or all of the cap. The buffer keeps its status.replicas and
// podTemplateRef and is provisioned as far as the cap allows.
const ReasonVirtualPodCapExceeded = "VirtualPodCapExceeded"

// Active reports whether b is to be provisioned: the active-capacity strategy, resolved by the
// buffer controller (ReadyForProvisioning=True, or False because MaxVirtualPods cuts it) with
// a pod template and replicas in its status.
func Active(b *autoscalingv1alpha1.CapacityBuffer) bool {
	strategy := autoscalingv1alpha1.ProvisioningStrategyActiveCapacity
	if b.Spec.ProvisioningStrategy != nil {
		strategy = *b.Spec.ProvisioningStrategy
	}
	ready := meta.FindStatusCondition(b.Status.Conditions, autoscalingv1alpha1.ConditionTypeReadyForProvisioning)
	return b.DeletionTimestamp == nil && strategy == autoscalingv1alpha1.ProvisioningStrategyActiveCapacity &&
		ready != nil && (ready.Status == metav1.ConditionTrue || ready.Reason == ReasonVirtualPodCapExceeded) &&
		b.Status.PodTemplateRef != nil && b.Status.Replicas != nil && *b.Status.Replicas > 0
}

// olderFirst orders buffers oldest first (then by namespace and name): the order in which
// they share MaxVirtualPods.
func olderFirst(a, b *autoscalingv1alpha1.CapacityBuffer) int {
	return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time),
		cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// Older reports whether a comes before b when buffers share MaxVirtualPods.
func Older(a, b *autoscalingv1alpha1.CapacityBuffer) bool { return olderFirst(a, b) < 0 }

// Share returns how many of want chunks buffer b gets of MaxVirtualPods, and how many the
// active buffers older than b take, as FromStatus builds them.
func Share(buffers []*autoscalingv1alpha1.CapacityBuffer, b *autoscalingv1alpha1.CapacityBuffer, want int32) (granted, taken int32) {
	for _, other := range buffers {
		if Active(other) && Older(other, b) {
			taken += min(*other.Status.Replicas, MaxVirtualPods)
		}
	}
	taken = min(taken, MaxVirtualPods)
	return max(0, min(want, MaxVirtualPods-taken)), taken
}

// FromStatus returns the virtual pods of the active buffers, as their status describes them
// (status.podTemplateRef, status.replicas), oldest buffer first, at most MaxVirtualPods in
// all: the buffer that reaches the cap gets what is left of it, newer ones none. A buffer whose
// PodTemplate is gone contributes none until the controller resolves it again.
func FromStatus(buffers []*autoscalingv1alpha1.CapacityBuffer, templates TemplateGetter) []*corev1.Pod {
	sorted := slices.Clone(buffers)
	slices.SortFunc(sorted, olderFirst)
	var pods []*corev1.Pod
	left := int32(MaxVirtualPods)
	for _, b := range sorted {
		if left == 0 {
			break
		}
		if !Active(b) {
			continue
		}
		pt := templates(b.Namespace, b.Status.PodTemplateRef.Name)
		if pt == nil {
			continue
		}
		n := min(*b.Status.Replicas, left)
		pods = append(pods, VirtualPods(b, &pt.Template, n)...)
		left -= n
	}
	return pods
}
