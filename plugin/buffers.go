package plugin

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1alpha1 "github.com/joinery-dev/joinery/apis/autoscaling/v1alpha1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/scheduling"
	"github.com/joinery-dev/joinery/simulation"
	"github.com/joinery-dev/joinery/simulation/buffer"
)

// Reasons of a CapacityBuffer's Provisioning condition, which joinery-scheduler writes: only
// the Provisioner's batch knows whether the buffer's virtual pods fit the nodes that exist.
const (
	// ReasonBufferProvisioned: every virtual pod fits registered, initialized nodes.
	ReasonBufferProvisioned = "Provisioned"
	// ReasonBufferWaitingForCapacity: some virtual pods wait for NodeClaims still launching
	// or launched by this batch.
	ReasonBufferWaitingForCapacity = "WaitingForCapacity"
	// ReasonBufferUnschedulable: some virtual pod fits no NodePool (the message says why).
	ReasonBufferUnschedulable = "Unschedulable"
)

// bufferSource reads CapacityBuffers and PodTemplates from the plugin's cache (gate
// CapacityBuffer). The buffers' virtual pods are built from the buffers' status, which
// joinery-controller's buffer controller resolves, on every batch: they are never API objects.
type bufferSource struct {
	reader client.Reader
	writer client.Client
}

// watchBuffers, with the CapacityBuffer gate on, starts the informers the buffers need and
// triggers a batch whenever the buffers' capacity may have changed with no pod pending: a
// buffer or PodTemplate changed, a pod was bound or left a node (real pods take buffer
// capacity first; the buffer then refills), a node came, went or changed readiness, or a
// NodeClaim was initialized or deleted.
func (p *Plugin) watchBuffers(ctx context.Context, c crcache.Cache, w client.Client, handle fwk.Handle) error {
	p.buffers = &bufferSource{reader: c, writer: w}
	trigger := func() {
		if p.planner != nil {
			p.batcher.Trigger()
		}
	}
	always := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { trigger() },
		UpdateFunc: func(any, any) { trigger() },
		DeleteFunc: func(any) { trigger() },
	}
	for _, obj := range []client.Object{&autoscalingv1alpha1.CapacityBuffer{}, &corev1.PodTemplate{}} {
		inf, err := c.GetInformer(ctx, obj, crcache.BlockUntilSynced(false))
		if err != nil {
			return fmt.Errorf("watching %T (is the CapacityBuffer CRD installed?): %w", obj, err)
		}
		if _, err := inf.AddEventHandler(always); err != nil {
			return fmt.Errorf("watching %T: %w", obj, err)
		}
	}
	// The rest only matter while some buffer wants capacity.
	whenBuffers := func(changed bool) {
		if changed && p.hasBuffers(ctx) {
			trigger()
		}
	}
	podHandler := cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Pod)
			n, ok2 := newObj.(*corev1.Pod)
			whenBuffers(ok1 && ok2 && (o.Spec.NodeName != n.Spec.NodeName || scheduling.PodFinished(n) != scheduling.PodFinished(o)))
		},
		DeleteFunc: func(obj any) {
			pod, ok := obj.(*corev1.Pod)
			whenBuffers(!ok || pod.Spec.NodeName != "")
		},
	}
	if _, err := handle.SharedInformerFactory().Core().V1().Pods().Informer().AddEventHandler(podHandler); err != nil {
		return fmt.Errorf("watching pods for buffers: %w", err)
	}
	nodeHandler := cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { whenBuffers(true) },
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Node)
			n, ok2 := newObj.(*corev1.Node)
			whenBuffers(ok1 && ok2 && (nodeReady(o) != nodeReady(n) || !equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints)))
		},
		DeleteFunc: func(any) { whenBuffers(true) },
	}
	if _, err := handle.SharedInformerFactory().Core().V1().Nodes().Informer().AddEventHandler(nodeHandler); err != nil {
		return fmt.Errorf("watching nodes for buffers: %w", err)
	}
	ncInformer, err := c.GetInformer(ctx, &karpv1.NodeClaim{}, crcache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("watching NodeClaims for buffers: %w", err)
	}
	_, err = ncInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*karpv1.NodeClaim)
			n, ok2 := newObj.(*karpv1.NodeClaim)
			whenBuffers(ok1 && ok2 && (launching(o) != launching(n)))
		},
		DeleteFunc: func(any) { whenBuffers(true) },
	})
	if err != nil {
		return fmt.Errorf("watching NodeClaims for buffers: %w", err)
	}
	return nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// hasBuffers reports whether some buffer is active.
func (p *Plugin) hasBuffers(ctx context.Context) bool {
	list, err := p.bufferList(ctx)
	return err == nil && slices.ContainsFunc(list, buffer.Active)
}

func (p *Plugin) bufferList(ctx context.Context) ([]*autoscalingv1alpha1.CapacityBuffer, error) {
	if p.buffers == nil {
		return nil, nil
	}
	var list autoscalingv1alpha1.CapacityBufferList
	if err := p.buffers.reader.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing capacity buffers: %w", err)
	}
	out := make([]*autoscalingv1alpha1.CapacityBuffer, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// virtualPods returns the virtual pods of every active buffer whose template names a
// schedulerName this profile provisions for (each profile's plugin plans its own pods), nil
// with the gate off.
func (p *Plugin) virtualPods(ctx context.Context) []*corev1.Pod {
	buffers, err := p.bufferList(ctx)
	if err != nil {
		klog.FromContext(ctx).Error(err, "reading capacity buffers; planning without them")
		return nil
	}
	pods := buffer.FromStatus(buffers, func(namespace, name string) *corev1.PodTemplate {
		pt := &corev1.PodTemplate{}
		if err := p.buffers.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pt); err != nil {
			return nil
		}
		return pt
	})
	return slices.DeleteFunc(pods, func(pod *corev1.Pod) bool {
		name := pod.Spec.SchedulerName
		if name == "" {
			name = corev1.DefaultSchedulerName
		}
		return !p.names.Has(name)
	})
}

// virtualIn returns the virtual pods among pods.
func virtualIn(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, pod := range pods {
		if buffer.IsVirtual(pod) {
			out = append(out, pod)
		}
	}
	return out
}

// reportBuffers writes each buffer's Provisioning condition from the batch's plan: True only
// when every virtual pod fits registered, initialized nodes; False with InsufficientCapacity
// when NodePool limits stop one, else with why it waits.
func (p *Plugin) reportBuffers(ctx context.Context, virtual []*corev1.Pod, plan *simulation.Plan, onExisting sets.Set[types.UID]) {
	byBuffer := map[string][]*corev1.Pod{}
	for _, pod := range virtual {
		if key := buffer.Of(pod); key != "" { // missing replicas have no buffer to report on
			byBuffer[key] = append(byBuffer[key], pod)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(byBuffer)) {
		cond := provisioningCondition(byBuffer[key], plan, onExisting)
		if err := p.writeProvisioning(ctx, key, cond); err != nil {
			klog.FromContext(ctx).Error(err, "writing a capacity buffer's Provisioning condition", "CapacityBuffer", key)
		}
	}
}

func provisioningCondition(pods []*corev1.Pod, plan *simulation.Plan, onExisting sets.Set[types.UID]) metav1.Condition {
	cond := metav1.Condition{Type: autoscalingv1alpha1.ConditionTypeProvisioning, Status: metav1.ConditionFalse}
	fit := 0
	var limited, unschedulable string
	for _, pod := range pods {
		switch why, failed := plan.Unschedulable[pod.UID]; {
		case onExisting.Has(pod.UID):
			fit++
		case failed && plan.HasReason(pod.UID, simulation.ReasonLimits) && limited == "":
			limited = why
		case failed && unschedulable == "":
			unschedulable = why
		}
	}
	switch {
	case fit == len(pods):
		cond.Status, cond.Reason = metav1.ConditionTrue, ReasonBufferProvisioned
		cond.Message = fmt.Sprintf("all %d chunk(s) fit existing nodes", len(pods))
	case limited != "":
		cond.Reason = autoscalingv1alpha1.ReasonInsufficientCapacity
		cond.Message = fmt.Sprintf("%d of %d chunk(s) fit existing nodes; NodePool limits stop the rest: %s", fit, len(pods), limited)
	case unschedulable != "":
		cond.Reason = ReasonBufferUnschedulable
		cond.Message = fmt.Sprintf("%d of %d chunk(s) fit existing nodes; the rest cannot be scheduled: %s", fit, len(pods), unschedulable)
	default:
		cond.Reason = ReasonBufferWaitingForCapacity
		cond.Message = fmt.Sprintf("%d of %d chunk(s) fit existing nodes; the rest wait for launching NodeClaims", fit, len(pods))
	}
	return cond
}

// writeProvisioning sets cond on the buffer key (namespace/name) when it differs, leaving the
// buffer controller's fields alone; the resourceVersion guards against a concurrent write.
func (p *Plugin) writeProvisioning(ctx context.Context, key string, cond metav1.Condition) error {
	namespace, name, _ := strings.Cut(key, "/")
	// The cache usually has the buffer as it is; after a conflict, read the API server.
	var reader client.Reader = p.buffers.reader
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		b := &autoscalingv1alpha1.CapacityBuffer{}
		err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, b)
		reader = p.buffers.writer
		if err != nil {
			return client.IgnoreNotFound(err)
		}
		cond.ObservedGeneration = b.Generation
		if old := meta.FindStatusCondition(b.Status.Conditions, cond.Type); old != nil &&
			old.Status == cond.Status && old.Reason == cond.Reason && old.Message == cond.Message && old.ObservedGeneration == cond.ObservedGeneration {
			return nil
		}
		before := b.DeepCopy()
		cond.LastTransitionTime = metav1.Now()
		meta.SetStatusCondition(&b.Status.Conditions, cond)
		if err := p.buffers.writer.Status().Patch(ctx, b, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return err
		}
		klog.FromContext(ctx).V(1).Info("capacity buffer provisioning", "CapacityBuffer", key, "status", cond.Status, "reason", cond.Reason, "message", cond.Message)
		return nil
	})
}
