package capacitybuffer

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	autoscalingv1alpha1 "github.com/joinery-dev/joinery/apis/autoscaling/v1alpha1"
	"github.com/joinery-dev/joinery/simulation/buffer"
)

// Cache indexes of CapacityBuffers by what they reference.
const (
	// podTemplateIndex: spec.podTemplateRef.name.
	podTemplateIndex = "capacitybuffer.podTemplateRef"
	// scalableIndex: "<group>/<kind>/<name>" of spec.scalableRef.
	scalableIndex = "capacitybuffer.scalableRef"
)

func scalableKey(group, kind, name string) string { return group + "/" + kind + "/" + name }

// SetupWithManager registers the controller: it reconciles a buffer when its spec changes (not
// on status writes, its own or the scheduler's), and when a PodTemplate or a Deployment,
// StatefulSet or ReplicaSet it references is created, changed (its template or replicas: a
// new generation) or deleted.
func (c *Controller) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	indexer := mgr.GetFieldIndexer()
	if err := indexer.IndexField(ctx, &autoscalingv1alpha1.CapacityBuffer{}, podTemplateIndex, func(obj client.Object) []string {
		if ref := obj.(*autoscalingv1alpha1.CapacityBuffer).Spec.PodTemplateRef; ref != nil {
			return []string{ref.Name}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing capacity buffers by pod template: %w", err)
	}
	if err := indexer.IndexField(ctx, &autoscalingv1alpha1.CapacityBuffer{}, scalableIndex, func(obj client.Object) []string {
		if ref := obj.(*autoscalingv1alpha1.CapacityBuffer).Spec.ScalableRef; ref != nil {
			return []string{scalableKey(ref.APIGroup, ref.Kind, ref.Name)}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("indexing capacity buffers by scalable ref: %w", err)
	}
	workloadChanged := builder.WithPredicates(predicate.GenerationChangedPredicate{})
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&autoscalingv1alpha1.CapacityBuffer{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// The buffers newer than one created, deleted or resized share what it leaves of
		// buffer.MaxVirtualPods.
		Watches(&autoscalingv1alpha1.CapacityBuffer{}, handler.EnqueueRequestsFromMapFunc(c.newerBuffers), builder.WithPredicates(resized)).
		Watches(&corev1.PodTemplate{}, handler.EnqueueRequestsFromMapFunc(c.buffersOfPodTemplate)).
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(c.buffersOfWorkload("Deployment")), workloadChanged).
		Watches(&appsv1.StatefulSet{}, handler.EnqueueRequestsFromMapFunc(c.buffersOfWorkload("StatefulSet")), workloadChanged).
		Watches(&appsv1.ReplicaSet{}, handler.EnqueueRequestsFromMapFunc(c.buffersOfWorkload("ReplicaSet")), workloadChanged).
		Complete(c)
}

// resized passes buffers created or deleted, and those whose status.replicas changed.
var resized = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*autoscalingv1alpha1.CapacityBuffer)
		n, ok2 := e.ObjectNew.(*autoscalingv1alpha1.CapacityBuffer)
		return ok1 && ok2 && (buffer.Active(o) != buffer.Active(n) || !ptr.Equal(o.Status.Replicas, n.Status.Replicas))
	},
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// newerBuffers maps a buffer to every buffer created after it, in any namespace.
func (c *Controller) newerBuffers(ctx context.Context, obj client.Object) []reconcile.Request {
	changed, ok := obj.(*autoscalingv1alpha1.CapacityBuffer)
	if !ok {
		return nil
	}
	list := &autoscalingv1alpha1.CapacityBufferList{}
	if err := c.client.List(ctx, list); err != nil {
		log.FromContext(ctx).Error(err, "listing capacity buffers sharing the virtual pod cap")
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if buffer.Older(changed, &list.Items[i]) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

// buffersOfPodTemplate maps a PodTemplate to the buffers that reference it, and to the buffer
// that owns it (a scalableRef buffer's own template, edited or deleted by someone else).
func (c *Controller) buffersOfPodTemplate(ctx context.Context, obj client.Object) []reconcile.Request {
	reqs := c.indexed(ctx, obj.GetNamespace(), podTemplateIndex, obj.GetName())
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Kind == "CapacityBuffer" && ref.APIVersion == autoscalingv1alpha1.SchemeGroupVersion.String() {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: ref.Name}})
		}
	}
	return reqs
}

func (c *Controller) buffersOfWorkload(kind string) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		return c.indexed(ctx, obj.GetNamespace(), scalableIndex, scalableKey(appsv1.GroupName, kind, obj.GetName()))
	}
}

func (c *Controller) indexed(ctx context.Context, namespace, index, value string) []reconcile.Request {
	list := &autoscalingv1alpha1.CapacityBufferList{}
	if err := c.client.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{index: value}); err != nil {
		log.FromContext(ctx).Error(err, "listing capacity buffers for a referenced object", "index", index, "value", value)
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, b := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&b)})
	}
	return reqs
}
