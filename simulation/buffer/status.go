package buffer

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	autoscalingv1alpha1 "github.com/joinery-dev/joinery/apis/autoscaling/v1alpha1"
)

// TemplateGetter returns the PodTemplate namespace/name, or nil when there is none.
type TemplateGetter func(namespace, name string) *corev1.PodTemplate

// Active reports whether b is to be provisioned: the active-capacity strategy, resolved by the
// buffer controller (ReadyForProvisioning=True) with a pod template and replicas in its status.
func Active(b *autoscalingv1alpha1.CapacityBuffer) bool {
	strategy := autoscalingv1alpha1.ProvisioningStrategyActiveCapacity
	if b.Spec.ProvisioningStrategy != nil {
		strategy = *b.Spec.ProvisioningStrategy
	}
	return b.DeletionTimestamp == nil && strategy == autoscalingv1alpha1.ProvisioningStrategyActiveCapacity &&
		meta.IsStatusConditionTrue(b.Status.Conditions, autoscalingv1alpha1.ConditionTypeReadyForProvisioning) &&
		b.Status.PodTemplateRef != nil && b.Status.Replicas != nil && *b.Status.Replicas > 0
}

// FromStatus returns the virtual pods of every active buffer, as their status describes them
// (status.podTemplateRef, status.replicas), ordered by buffer namespace and name. A buffer
// whose PodTemplate is gone contributes none until the controller resolves it again.
func FromStatus(buffers []*autoscalingv1alpha1.CapacityBuffer, templates TemplateGetter) []*corev1.Pod {
	sorted := slices.Clone(buffers)
	slices.SortFunc(sorted, func(a, b *autoscalingv1alpha1.CapacityBuffer) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	var pods []*corev1.Pod
	for _, b := range sorted {
		if !Active(b) {
			continue
		}
		pt := templates(b.Namespace, b.Status.PodTemplateRef.Name)
		if pt == nil {
			continue
		}
		pods = append(pods, VirtualPods(b, &pt.Template, *b.Status.Replicas)...)
	}
	return pods
}
