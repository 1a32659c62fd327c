// Package capacitybuffer is the CapacityBuffer controller (gate CapacityBuffer): it resolves a
// buffer's pod template — a PodTemplate (podTemplateRef) or the spec.template of a Deployment,
// StatefulSet or ReplicaSet (scalableRef), same namespace — and the number of chunks, and
// writes them to the buffer's status (replicas, podTemplateRef, ReadyForProvisioning).
//
// The template has to reach joinery-scheduler, which plans the buffer's virtual pods; the two
// processes share nothing but cluster objects. So for a scalableRef the controller keeps a
// PodTemplate of its own, "capacitybuffer-<buffer>", owned by the buffer (garbage-collected
// with it), holding the workload's template; status.podTemplateRef names it. Buffers are
// reconciled on their own changes and on changes of the PodTemplates and workloads they
// reference (watches, no polling).
package capacitybuffer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	autoscalingv1alpha1 "github.com/joinery-dev/joinery/apis/autoscaling/v1alpha1"
	"github.com/joinery-dev/joinery/scheduling"
	"github.com/joinery-dev/joinery/simulation/buffer"
)

// Name is the controller's name in logs and metrics.
const Name = "capacitybuffer"

// Reasons of ReadyForProvisioning=False besides the API's ScalableRefNotFound and
// PodTemplateNotFound.
const (
	// ReasonInvalidSpec: the spec cannot be sized (the message names the field).
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonUnsupportedScalableRef: scalableRef names a kind other than a Deployment,
	// StatefulSet or ReplicaSet of group apps.
	ReasonUnsupportedScalableRef = "UnsupportedScalableRef"
	// ReasonUnsupportedProvisioningStrategy: only buffer.x-k8s.io/active-capacity is served.
	ReasonUnsupportedProvisioningStrategy = "UnsupportedProvisioningStrategy"
	// ReasonTemplateConflict: the PodTemplate the controller would keep for a scalableRef
	// exists and belongs to something else.
	ReasonTemplateConflict = "PodTemplateConflict"
	// ReasonReady: template and replicas are resolved.
	ReasonReady = "Ready"
	// ReasonNotReadyForProvisioning: Provisioning=False because ReadyForProvisioning is.
	ReasonNotReadyForProvisioning = "NotReadyForProvisioning"
)

// Controller reconciles CapacityBuffers.
type Controller struct {
	client   client.Client
	recorder events.EventRecorder
	clock    clock.PassiveClock
}

// New returns the controller. recorder may be nil; clk nil means the real clock.
func New(c client.Client, recorder events.EventRecorder, clk clock.PassiveClock) *Controller {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Controller{client: c, recorder: recorder, clock: clk}
}

// resolved is what a buffer's spec comes to.
type resolved struct {
	template    *corev1.PodTemplate // the PodTemplate chunks are made from (status.podTemplateRef)
	replicas    int32
	reason, msg string // ReadyForProvisioning=False when reason is set
	// granted is how many of replicas buffer.MaxVirtualPods leaves the buffer; below replicas,
	// ReadyForProvisioning is False (VirtualPodCapExceeded) and taken says what older buffers
	// take.
	granted, taken int32
}

// Reconcile resolves one buffer and writes its status when it changed.
func (c *Controller) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := &autoscalingv1alpha1.CapacityBuffer{}
	if err := c.client.Get(ctx, req.NamespacedName, b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if b.DeletionTimestamp != nil {
		return ctrl.Result{}, nil // its own PodTemplate goes with it (owner reference)
	}
	r, err := c.resolve(ctx, b)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := c.writeStatus(ctx, b, r); err != nil {
		if apierrors.IsConflict(err) {
			// joinery-scheduler wrote Provisioning meanwhile: resolve again on the fresh object.
			return ctrl.Result{RequeueAfter: conflictRetry}, nil
		}
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// conflictRetry is how soon a buffer whose status write lost a race is reconciled again.
const conflictRetry = 100 * time.Millisecond

func (c *Controller) resolve(ctx context.Context, b *autoscalingv1alpha1.CapacityBuffer) (resolved, error) {
	if s := b.Spec.ProvisioningStrategy; s != nil && *s != autoscalingv1alpha1.ProvisioningStrategyActiveCapacity {
		return resolved{reason: ReasonUnsupportedProvisioningStrategy,
			msg: fmt.Sprintf("spec.provisioningStrategy: %q is not served; joinery provisions %q", *s, autoscalingv1alpha1.ProvisioningStrategyActiveCapacity)}, nil
	}
	var (
		template *corev1.PodTemplate
		workload *int32
	)
	switch {
	case b.Spec.PodTemplateRef != nil:
		// A buffer that moved from a scalableRef no longer needs its own PodTemplate.
		if err := c.dropOwnTemplate(ctx, b); err != nil {
			return resolved{}, err
		}
		template = &corev1.PodTemplate{}
		err := c.client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.PodTemplateRef.Name}, template)
		if apierrors.IsNotFound(err) {
			return resolved{reason: autoscalingv1alpha1.ReasonPodTemplateNotFound,
				msg: fmt.Sprintf("spec.podTemplateRef: PodTemplate %s/%s not found", b.Namespace, b.Spec.PodTemplateRef.Name)}, nil
		}
		if err != nil {
			return resolved{}, fmt.Errorf("reading PodTemplate %s/%s: %w", b.Namespace, b.Spec.PodTemplateRef.Name, err)
		}
	case b.Spec.ScalableRef != nil:
		spec, replicas, r, err := c.workload(ctx, b)
		if err != nil || r.reason != "" {
			return r, err
		}
		workload = replicas
		if template, r, err = c.ensureTemplate(ctx, b, spec); err != nil || r.reason != "" {
			return r, err
		}
	default:
		return resolved{reason: ReasonInvalidSpec, msg: "spec: exactly one of podTemplateRef or scalableRef must be set"}, nil
	}
	chunk := scheduling.PodRequests(&corev1.Pod{Spec: template.Template.Spec})
	n, err := buffer.Replicas(&b.Spec, workload, chunk)
	if err != nil {
		return resolved{reason: ReasonInvalidSpec, msg: err.Error()}, nil
	}
	var list autoscalingv1alpha1.CapacityBufferList
	if err := c.client.List(ctx, &list); err != nil {
		return resolved{}, fmt.Errorf("listing capacity buffers: %w", err)
	}
	buffers := make([]*autoscalingv1alpha1.CapacityBuffer, len(list.Items))
	for i := range list.Items {
		buffers[i] = &list.Items[i]
	}
	granted, taken := buffer.Share(buffers, b, n)
	return resolved{template: template, replicas: n, granted: granted, taken: taken}, nil
}

// workload reads the scalableRef's pod template and spec.replicas (nil: the API's default, 1).
func (c *Controller) workload(ctx context.Context, b *autoscalingv1alpha1.CapacityBuffer) (*corev1.PodTemplateSpec, *int32, resolved, error) {
	ref := b.Spec.ScalableRef
	var obj client.Object
	if ref.APIGroup == appsv1.GroupName {
		switch ref.Kind {
		case "Deployment":
			obj = &appsv1.Deployment{}
		case "StatefulSet":
			obj = &appsv1.StatefulSet{}
		case "ReplicaSet":
			obj = &appsv1.ReplicaSet{}
		}
	}
	if obj == nil {
		return nil, nil, resolved{reason: ReasonUnsupportedScalableRef,
			msg: fmt.Sprintf("spec.scalableRef: %s %q of group %q is not supported; use a Deployment, StatefulSet or ReplicaSet of group apps", ref.Kind, ref.Name, ref.APIGroup)}, nil
	}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: ref.Name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, resolved{reason: autoscalingv1alpha1.ReasonScalableRefNotFound,
				msg: fmt.Sprintf("spec.scalableRef: %s %s/%s not found", ref.Kind, b.Namespace, ref.Name)}, nil
		}
		return nil, nil, resolved{}, fmt.Errorf("reading %s %s/%s: %w", ref.Kind, b.Namespace, ref.Name, err)
	}
	one := int32(1)
	switch w := obj.(type) {
	case *appsv1.Deployment:
		return &w.Spec.Template, orDefault(w.Spec.Replicas, &one), resolved{}, nil
	case *appsv1.StatefulSet:
		return &w.Spec.Template, orDefault(w.Spec.Replicas, &one), resolved{}, nil
	case *appsv1.ReplicaSet:
		return &w.Spec.Template, orDefault(w.Spec.Replicas, &one), resolved{}, nil
	}
	return nil, nil, resolved{}, errors.New("unreachable: unknown workload type")
}

func orDefault(v, def *int32) *int32 {
	if v == nil {
		return def
	}
	return v
}

// TemplateName is the PodTemplate the controller keeps for a scalableRef buffer.
func TemplateName(bufferName string) string {
	name := "capacitybuffer-" + bufferName
	if len(name) <= 253 {
		return name
	}
	sum := sha256.Sum256([]byte(bufferName))
	return name[:240] + "-" + hex.EncodeToString(sum[:6])
}

// ensureTemplate creates or updates the buffer's own PodTemplate to hold spec.
func (c *Controller) ensureTemplate(ctx context.Context, b *autoscalingv1alpha1.CapacityBuffer, spec *corev1.PodTemplateSpec) (*corev1.PodTemplate, resolved, error) {
	pt := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: b.Namespace, Name: TemplateName(b.Name)}}
	err := c.client.Get(ctx, client.ObjectKeyFromObject(pt), pt)
	switch {
	case apierrors.IsNotFound(err):
		pt.Labels = map[string]string{LabelKey: b.Name}
		pt.Template = *spec.DeepCopy()
		if err := controllerutil.SetControllerReference(b, pt, c.client.Scheme()); err != nil {
			return nil, resolved{}, fmt.Errorf("owning PodTemplate %s/%s: %w", pt.Namespace, pt.Name, err)
		}
		if err := c.client.Create(ctx, pt); err != nil {
			return nil, resolved{}, fmt.Errorf("creating PodTemplate %s/%s: %w", pt.Namespace, pt.Name, err)
		}
		return pt, resolved{}, nil
	case err != nil:
		return nil, resolved{}, fmt.Errorf("reading PodTemplate %s/%s: %w", pt.Namespace, pt.Name, err)
	}
	if !metav1.IsControlledBy(pt, b) {
		return nil, resolved{reason: ReasonTemplateConflict,
			msg: fmt.Sprintf("PodTemplate %s/%s exists and is not this buffer's; rename the buffer or that PodTemplate", pt.Namespace, pt.Name)}, nil
	}
	if equality.Semantic.DeepEqual(pt.Template, *spec) {
		return pt, resolved{}, nil
	}
	pt.Template = *spec.DeepCopy()
	if err := c.client.Update(ctx, pt); err != nil {
		return nil, resolved{}, fmt.Errorf("updating PodTemplate %s/%s: %w", pt.Namespace, pt.Name, err)
	}
	return pt, resolved{}, nil
}

// dropOwnTemplate deletes the PodTemplate the controller kept for b's former scalableRef.
func (c *Controller) dropOwnTemplate(ctx context.Context, b *autoscalingv1alpha1.CapacityBuffer) error {
	pt := &corev1.PodTemplate{}
	err := c.client.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: TemplateName(b.Name)}, pt)
	if apierrors.IsNotFound(err) || (err == nil && !metav1.IsControlledBy(pt, b)) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading PodTemplate %s/%s: %w", b.Namespace, TemplateName(b.Name), err)
	}
	if err := c.client.Delete(ctx, pt); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting PodTemplate %s/%s: %w", pt.Namespace, pt.Name, err)
	}
	return nil
}

// LabelKey labels the PodTemplates the controller keeps with their buffer's name.
const LabelKey = "autoscaling.x-k8s.io/capacity-buffer"

// writeStatus sets the fields this controller owns — replicas, podTemplateRef, the template's
// generation, the strategy and ReadyForProvisioning — leaving Provisioning (joinery-scheduler's)
// as it is, and writes only a change. The patch carries the resourceVersion, so a concurrent
// write of the scheduler's condition is never lost: the loser retries.
func (c *Controller) writeStatus(ctx context.Context, b *autoscalingv1alpha1.CapacityBuffer, r resolved) error {
	before := b.DeepCopy()
	cond := metav1.Condition{Type: autoscalingv1alpha1.ConditionTypeReadyForProvisioning, ObservedGeneration: b.Generation}
	if r.reason != "" {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, r.reason, r.msg
		b.Status.Replicas, b.Status.PodTemplateRef, b.Status.PodTemplateGeneration = nil, nil, nil
		// joinery-scheduler writes Provisioning only for buffers it plans; one that is not
		// ready is not planned, so its last Provisioning would go stale.
		meta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{Type: autoscalingv1alpha1.ConditionTypeProvisioning,
			Status: metav1.ConditionFalse, Reason: ReasonNotReadyForProvisioning, ObservedGeneration: b.Generation,
			Message: "not provisioned: the buffer is not ready for provisioning", LastTransitionTime: metav1.NewTime(c.clock.Now())})
	} else {
		cond.Status, cond.Reason = metav1.ConditionTrue, ReasonReady
		cond.Message = fmt.Sprintf("%d chunk(s) of PodTemplate %s", r.replicas, r.template.Name)
		if r.granted < r.replicas {
			// Still provisioned as far as the cap allows (buffer.Active).
			cond.Status, cond.Reason = metav1.ConditionFalse, buffer.ReasonVirtualPodCapExceeded
			cond.Message = fmt.Sprintf("%d of %d chunk(s) of PodTemplate %s are provisioned: joinery builds at most %d virtual pods across all CapacityBuffers, oldest first, and older buffers take %d",
				r.granted, r.replicas, r.template.Name, buffer.MaxVirtualPods, r.taken)
		}
		if r.granted == 0 {
			// No virtual pod of it is planned, so joinery-scheduler would leave its last
			// Provisioning as it was.
			meta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{Type: autoscalingv1alpha1.ConditionTypeProvisioning,
				Status: metav1.ConditionFalse, Reason: buffer.ReasonVirtualPodCapExceeded, ObservedGeneration: b.Generation,
				Message: "not provisioned: older buffers take every virtual pod joinery builds", LastTransitionTime: metav1.NewTime(c.clock.Now())})
		}
		b.Status.Replicas = &r.replicas
		b.Status.PodTemplateRef = &autoscalingv1alpha1.LocalObjectRef{Name: r.template.Name}
		gen := r.template.Generation
		b.Status.PodTemplateGeneration = &gen
	}
	strategy := autoscalingv1alpha1.ProvisioningStrategyActiveCapacity
	if b.Spec.ProvisioningStrategy != nil {
		strategy = *b.Spec.ProvisioningStrategy
	}
	b.Status.ProvisioningStrategy = &strategy
	cond.LastTransitionTime = metav1.NewTime(c.clock.Now())
	meta.SetStatusCondition(&b.Status.Conditions, cond)
	if equality.Semantic.DeepEqual(before.Status, b.Status) {
		return nil
	}
	patch := client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
	if err := c.client.Status().Patch(ctx, b, patch); err != nil {
		return fmt.Errorf("writing status of CapacityBuffer %s/%s: %w", b.Namespace, b.Name, err)
	}
	log.FromContext(ctx).V(1).Info("capacity buffer resolved", "ready", cond.Status, "reason", cond.Reason, "message", cond.Message)
	if c.recorder != nil && cond.Status == metav1.ConditionFalse && !meta.IsStatusConditionFalse(before.Status.Conditions, cond.Type) {
		c.recorder.Eventf(b, nil, corev1.EventTypeWarning, cond.Reason, "Resolve", "%s", cond.Message)
	}
	return nil
}
