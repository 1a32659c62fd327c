package buffer

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	autoscalingv1alpha1 "github.com/joinery-dev/joinery/apis/autoscaling/v1alpha1"
	"github.com/joinery-dev/joinery/e2e/framework"
	"github.com/joinery-dev/joinery/plugin"
)

// TestCapacityBufferNodePoolLimits: a buffer of 3 chunks of a PodTemplate in a NodePool whose
// limits allow one c5.large gets that one node and reports Provisioning=False with
// InsufficientCapacity.
func TestCapacityBufferNodePoolLimits(t *testing.T) {
	pool := framework.UniqueName("limited")
	createNodePool(t, pool, `  limits: {cpu: "2"}`)
	ns := env.Namespace(t)
	pt := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "chunk", Namespace: ns},
		Template: corev1.PodTemplateSpec{Spec: framework.GroupPodSpec(pool, "1200m", "256Mi")}}
	if _, err := env.Client.CoreV1().PodTemplates(ns).Create(t.Context(), pt, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createBuffer(t, ns, "limited", `{"podTemplateRef": {"name": "chunk"}, "replicas": 3}`)
	awaitBuffer(t, ns, "limited", "Provisioning=False/InsufficientCapacity with its PodTemplate", func(b *autoscalingv1alpha1.CapacityBuffer) error {
		if b.Status.PodTemplateRef == nil || b.Status.PodTemplateRef.Name != "chunk" {
			return fmt.Errorf("status.podTemplateRef %v", b.Status.PodTemplateRef)
		}
		c := meta.FindStatusCondition(b.Status.Conditions, autoscalingv1alpha1.ConditionTypeProvisioning)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != autoscalingv1alpha1.ReasonInsufficientCapacity {
			return fmt.Errorf("Provisioning %+v", c)
		}
		return nil
	})
	initializedNodeClaims(t, pool, 1)
	// With its one node up, one chunk fits; the limits still stop the other two.
	awaitBuffer(t, ns, "limited", "one chunk on the node, InsufficientCapacity for the rest", func(b *autoscalingv1alpha1.CapacityBuffer) error {
		c := meta.FindStatusCondition(b.Status.Conditions, autoscalingv1alpha1.ConditionTypeProvisioning)
		if c == nil || c.Reason != autoscalingv1alpha1.ReasonInsufficientCapacity || !strings.HasPrefix(c.Message, "1 of 3 chunk(s) fit existing nodes") {
			return fmt.Errorf("Provisioning %+v", c)
		}
		return nil
	})
	if ncs := mustNodeClaims(t, pool); len(ncs) != 1 {
		t.Errorf("%d NodeClaims, want the 1 the limits allow", len(ncs))
	}
}

// TestCapacityBufferResolution: ReadyForProvisioning follows the references: False with
// ScalableRefNotFound and PodTemplateNotFound while they are missing, True once the StatefulSet
// exists, and the chunk count (50% of its replicas) follows a scale at once. The pods fit no
// NodePool, so no node is launched: the buffer says Unschedulable.
func TestCapacityBufferResolution(t *testing.T) {
	ns := env.Namespace(t)
	createBuffer(t, ns, "missing-template", `{"podTemplateRef": {"name": "nothing"}, "replicas": 1}`)
	createBuffer(t, ns, "db", `{"scalableRef": {"apiGroup": "apps", "kind": "StatefulSet", "name": "db"}, "percentage": 50}`)
	awaitReady(t, ns, "missing-template", metav1.ConditionFalse, autoscalingv1alpha1.ReasonPodTemplateNotFound)
	awaitReady(t, ns, "db", metav1.ConditionFalse, autoscalingv1alpha1.ReasonScalableRefNotFound)

	labels := map[string]string{"app": "db"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: framework.GroupPodSpec("no-such-pool", "100m", "64Mi")},
		},
	}
	if _, err := env.Client.AppsV1().StatefulSets(ns).Create(t.Context(), sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	awaitReplicas(t, ns, "db", 1) // 50% of 0, at least one
	patch := `{"spec": {"replicas": 7}}`
	if _, err := env.Client.AppsV1().StatefulSets(ns).Patch(t.Context(), "db", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	awaitReplicas(t, ns, "db", 4) // 50% of 7, rounded up
	awaitBuffer(t, ns, "db", "Provisioning=False/Unschedulable", func(b *autoscalingv1alpha1.CapacityBuffer) error {
		c := meta.FindStatusCondition(b.Status.Conditions, autoscalingv1alpha1.ConditionTypeProvisioning)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != plugin.ReasonBufferUnschedulable {
			return fmt.Errorf("Provisioning %+v", c)
		}
		return nil
	})
}

func awaitReady(t *testing.T, ns, name string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	awaitBuffer(t, ns, name, fmt.Sprintf("ReadyForProvisioning=%s/%s", status, reason), func(b *autoscalingv1alpha1.CapacityBuffer) error {
		c := meta.FindStatusCondition(b.Status.Conditions, autoscalingv1alpha1.ConditionTypeReadyForProvisioning)
		if c == nil || c.Status != status || c.Reason != reason {
			return fmt.Errorf("ReadyForProvisioning %+v", c)
		}
		return nil
	})
}

func awaitReplicas(t *testing.T, ns, name string, want int32) {
	t.Helper()
	awaitBuffer(t, ns, name, fmt.Sprintf("ReadyForProvisioning=True with %d replicas", want), func(b *autoscalingv1alpha1.CapacityBuffer) error {
		if !meta.IsStatusConditionTrue(b.Status.Conditions, autoscalingv1alpha1.ConditionTypeReadyForProvisioning) || b.Status.Replicas == nil || *b.Status.Replicas != want {
			return fmt.Errorf("replicas %v, conditions %v", b.Status.Replicas, b.Status.Conditions)
		}
		return nil
	})
}
