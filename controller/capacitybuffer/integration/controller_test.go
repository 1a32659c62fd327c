package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1alpha1 "github.com/joinery-dev/joinery/apis/autoscaling/v1alpha1"
	"github.com/joinery-dev/joinery/controller/capacitybuffer"
)

const awaitTimeout = time.Minute

func namespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cb-" + rand.String(6)}}
	if err := admin.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func podTemplate(cpu string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
	}
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := admin.Create(t.Context(), obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

func newBuffer(ns, name string, spec autoscalingv1alpha1.CapacityBufferSpec) *autoscalingv1alpha1.CapacityBuffer {
	return &autoscalingv1alpha1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: spec}
}

// awaitStatus waits until the buffer's status passes ok.
func awaitStatus(t *testing.T, ns, name string, ok func(*autoscalingv1alpha1.CapacityBuffer) error) *autoscalingv1alpha1.CapacityBuffer {
	t.Helper()
	b := &autoscalingv1alpha1.CapacityBuffer{}
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, awaitTimeout, true, func(ctx context.Context) (bool, error) {
		if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, b); err != nil {
			last = err
			return false, nil
		}
		last = ok(b)
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("buffer %s/%s: %v (last: %v)", ns, name, err, last)
	}
	return b
}

func ready(replicas int32, template string) func(*autoscalingv1alpha1.CapacityBuffer) error {
	return func(b *autoscalingv1alpha1.CapacityBuffer) error {
		c := meta.FindStatusCondition(b.Status.Conditions, autoscalingv1alpha1.ConditionTypeReadyForProvisioning)
		if c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("ReadyForProvisioning %+v", c)
		}
		if b.Status.Replicas == nil || *b.Status.Replicas != replicas || b.Status.PodTemplateRef == nil || b.Status.PodTemplateRef.Name != template {
			return fmt.Errorf("replicas %v podTemplateRef %v, want %d of %s", b.Status.Replicas, b.Status.PodTemplateRef, replicas, template)
		}
		return nil
	}
}

func notReady(reason, message string) func(*autoscalingv1alpha1.CapacityBuffer) error {
	return func(b *autoscalingv1alpha1.CapacityBuffer) error {
		c := meta.FindStatusCondition(b.Status.Conditions, autoscalingv1alpha1.ConditionTypeReadyForProvisioning)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != reason || !strings.Contains(c.Message, message) {
			return fmt.Errorf("ReadyForProvisioning %+v, want False/%s containing %q", c, reason, message)
		}
		if b.Status.Replicas != nil || b.Status.PodTemplateRef != nil {
			return fmt.Errorf("status keeps replicas %v and podTemplateRef %v", b.Status.Replicas, b.Status.PodTemplateRef)
		}
		if p := meta.FindStatusCondition(b.Status.Conditions, autoscalingv1alpha1.ConditionTypeProvisioning); p == nil || p.Status != metav1.ConditionFalse || p.Reason != capacitybuffer.ReasonNotReadyForProvisioning {
			return fmt.Errorf("Provisioning %+v, want False/%s", p, capacitybuffer.ReasonNotReadyForProvisioning)
		}
		return nil
	}
}

// TestBufferController: each reference and sizing resolves as the API says, bad specs are
// refused with the field named, and the buffer follows its workload (scale and template) and
// its PodTemplate through watches.
func TestBufferController(t *testing.T) {
	startController(t)
	ns := namespace(t)
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}

	t.Run("ReplicaSet sized by limits; the template follows the workload", func(t *testing.T) {
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](0), Selector: selector, Template: podTemplate("500m")}}
		create(t, rs)
		create(t, newBuffer(ns, "by-limits", autoscalingv1alpha1.CapacityBufferSpec{
			ScalableRef: &autoscalingv1alpha1.ScalableRef{APIGroup: "apps", Kind: "ReplicaSet", Name: "web"},
			Limits:      corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}))
		own := capacitybuffer.TemplateName("by-limits")
		awaitStatus(t, ns, "by-limits", ready(4, own))
		pt := &corev1.PodTemplate{}
		if err := admin.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: own}, pt); err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(pt.Template.Spec.Containers[0].Resources, rs.Spec.Template.Spec.Containers[0].Resources) || len(pt.OwnerReferences) != 1 || pt.OwnerReferences[0].Name != "by-limits" {
			t.Fatalf("own PodTemplate %+v does not hold the ReplicaSet's template or is not the buffer's", pt)
		}
		// A bigger chunk: fewer fit the limits.
		if err := admin.Get(t.Context(), client.ObjectKeyFromObject(rs), rs); err != nil {
			t.Fatal(err)
		}
		rs.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1")
		if err := admin.Update(t.Context(), rs); err != nil {
			t.Fatal(err)
		}
		awaitStatus(t, ns, "by-limits", ready(2, own))
	})

	t.Run("PodTemplate with replicas follows the PodTemplate", func(t *testing.T) {
		create(t, newBuffer(ns, "from-template", autoscalingv1alpha1.CapacityBufferSpec{
			PodTemplateRef: &autoscalingv1alpha1.LocalObjectRef{Name: "chunk"}, Replicas: ptr.To[int32](3),
			Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}))
		awaitStatus(t, ns, "from-template", notReady(autoscalingv1alpha1.ReasonPodTemplateNotFound, "spec.podTemplateRef"))
		create(t, &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "chunk", Namespace: ns}, Template: podTemplate("250m")})
		awaitStatus(t, ns, "from-template", ready(3, "chunk")) // limits allow 4
	})

	t.Run("Deployment by percentage, minimum with replicas", func(t *testing.T) {
		create(t, newBuffer(ns, "percent", autoscalingv1alpha1.CapacityBufferSpec{
			ScalableRef: &autoscalingv1alpha1.ScalableRef{APIGroup: "apps", Kind: "Deployment", Name: "api"},
			Percentage:  ptr.To[int32](30), Replicas: ptr.To[int32](2)}))
		awaitStatus(t, ns, "percent", notReady(autoscalingv1alpha1.ReasonScalableRefNotFound, "spec.scalableRef: Deployment"))
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: ns},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Selector: selector, Template: podTemplate("100m")}}
		create(t, d)
		own := capacitybuffer.TemplateName("percent")
		awaitStatus(t, ns, "percent", ready(1, own)) // 30% of 3, rounded up
		if err := admin.Patch(t.Context(), d, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"replicas":20}}`))); err != nil {
			t.Fatal(err)
		}
		awaitStatus(t, ns, "percent", ready(2, own)) // 30% of 20 is 6; replicas caps it at 2

		// Moved to a PodTemplate: the buffer's own PodTemplate goes.
		b := newBuffer(ns, "percent", autoscalingv1alpha1.CapacityBufferSpec{})
		patch := `{"spec":{"scalableRef":null,"percentage":null,"podTemplateRef":{"name":"chunk"},"replicas":1}}`
		if err := admin.Patch(t.Context(), b, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
			t.Fatal(err)
		}
		awaitStatus(t, ns, "percent", ready(1, "chunk"))
		err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, awaitTimeout, true, func(ctx context.Context) (bool, error) {
			return apierrors.IsNotFound(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: own}, &corev1.PodTemplate{})), nil
		})
		if err != nil {
			t.Fatalf("PodTemplate %s still there after the buffer left its scalableRef: %v", own, err)
		}
	})

	t.Run("invalid specs name the field", func(t *testing.T) {
		create(t, newBuffer(ns, "unsized", autoscalingv1alpha1.CapacityBufferSpec{
			ScalableRef: &autoscalingv1alpha1.ScalableRef{APIGroup: "apps", Kind: "Deployment", Name: "api"}}))
		awaitStatus(t, ns, "unsized", notReady(capacitybuffer.ReasonInvalidSpec, "spec: one of replicas, percentage or limits must be set"))
		create(t, newBuffer(ns, "job", autoscalingv1alpha1.CapacityBufferSpec{
			ScalableRef: &autoscalingv1alpha1.ScalableRef{APIGroup: "batch", Kind: "Job", Name: "api"}, Replicas: ptr.To[int32](1)}))
		awaitStatus(t, ns, "job", notReady(capacitybuffer.ReasonUnsupportedScalableRef, "spec.scalableRef: Job"))
		standby := "example.com/standby"
		create(t, newBuffer(ns, "standby", autoscalingv1alpha1.CapacityBufferSpec{ProvisioningStrategy: &standby,
			PodTemplateRef: &autoscalingv1alpha1.LocalObjectRef{Name: "chunk"}, Replicas: ptr.To[int32](1)}))
		awaitStatus(t, ns, "standby", notReady(capacitybuffer.ReasonUnsupportedProvisioningStrategy, "spec.provisioningStrategy"))
		create(t, &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: capacitybuffer.TemplateName("taken"), Namespace: ns}, Template: podTemplate("100m")})
		create(t, newBuffer(ns, "taken", autoscalingv1alpha1.CapacityBufferSpec{
			ScalableRef: &autoscalingv1alpha1.ScalableRef{APIGroup: "apps", Kind: "Deployment", Name: "api"}, Replicas: ptr.To[int32](1)}))
		awaitStatus(t, ns, "taken", notReady(capacitybuffer.ReasonTemplateConflict, "is not this buffer's"))
	})
}
