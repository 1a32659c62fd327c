package integration

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	autoscalingv1alpha1 "github.com/joinery-dev/joinery/apis/autoscaling/v1alpha1"
	"github.com/joinery-dev/joinery/simulation/buffer"
)

// TestVirtualPodCap (issue 26, item 3): buffers share buffer.MaxVirtualPods, oldest first. A
// buffer the cap cuts says so (ReadyForProvisioning=False, VirtualPodCapExceeded, the cap
// named) and keeps its size, which both binaries build as far as the cap allows; once the
// older buffer goes, it is ready again. Buffers of other tests in the cluster are older and
// take a few chunks too, so the counts are asserted from this test's buffers only.
func TestVirtualPodCap(t *testing.T) {
	startController(t)
	ns := namespace(t)
	create(t, &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "chunk", Namespace: ns}, Template: podTemplate("100m")})
	spec := autoscalingv1alpha1.CapacityBufferSpec{PodTemplateRef: &autoscalingv1alpha1.LocalObjectRef{Name: "chunk"}, Replicas: ptr.To[int32](600)}
	create(t, newBuffer(ns, "first", spec))
	awaitStatus(t, ns, "first", ready(600, "chunk"))
	create(t, newBuffer(ns, "second", spec))
	awaitStatus(t, ns, "second", func(b *autoscalingv1alpha1.CapacityBuffer) error {
		c := meta.FindStatusCondition(b.Status.Conditions, autoscalingv1alpha1.ConditionTypeReadyForProvisioning)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != buffer.ReasonVirtualPodCapExceeded {
			return fmt.Errorf("ReadyForProvisioning %+v, want False/%s", c, buffer.ReasonVirtualPodCapExceeded)
		}
		if !strings.Contains(c.Message, fmt.Sprintf("at most %d virtual pods", buffer.MaxVirtualPods)) || !strings.Contains(c.Message, "of 600 chunk(s)") {
			return fmt.Errorf("message %q does not name the cap and the buffer's size", c.Message)
		}
		if b.Status.Replicas == nil || *b.Status.Replicas != 600 || b.Status.PodTemplateRef == nil {
			return fmt.Errorf("replicas %v podTemplateRef %v, want 600 of chunk kept", b.Status.Replicas, b.Status.PodTemplateRef)
		}
		if !buffer.Active(b) {
			return fmt.Errorf("a cut buffer is not provisioned at all")
		}
		return nil
	})
	if err := admin.Delete(t.Context(), newBuffer(ns, "first", spec)); err != nil {
		t.Fatal(err)
	}
	awaitStatus(t, ns, "second", ready(600, "chunk"))
}
