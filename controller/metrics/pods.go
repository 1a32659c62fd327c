package metrics

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/scheduling"
)

// PodControllerName names the pod metrics controller in logs.
const PodControllerName = "metrics.pod"

// podStateLabelNames are karpenter_pods_state's labels.
var podStateLabelNames = []string{"name", "namespace", "owner", "node", "nodepool", "zone", "arch", "capacity_type", "instance_type", "phase", "ready"}

// Summary quantiles of karpenter_pods_startup_duration_seconds, each within 1%.
var startupObjectives = map[float64]float64{0: 0.01, 0.5: 0.01, 0.9: 0.01, 0.99: 0.01, 1: 0.01}

var (
	podState = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "pods", Name: "state",
		Help: "Pod state is the current state of pods. This metric can be used several ways as it is labeled by the pod name, namespace, owner, node, nodepool name, zone, architecture, capacity type, instance type, pod phase, and pod readiness.",
	}, podStateLabelNames)
	podStartupDuration = prometheus.NewSummary(prometheus.SummaryOpts{
		Namespace: "karpenter", Subsystem: "pods", Name: "startup_duration_seconds",
		Help:       "The time from pod creation until the pod is running.",
		Objectives: startupObjectives,
	})
	podUnstartedTime = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "pods", Name: "unstarted_time_seconds",
		Help: "The time from pod creation until the pod is running.",
	}, []string{"name", "namespace"})
	podBoundDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "karpenter", Subsystem: "pods", Name: "bound_duration_seconds",
		Help:    "The time from pod creation until the pod is bound.",
		Buckets: []float64{0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 45, 60, 90, 120, 180, 300, 600, 1200, 1800},
	})
	podUnboundTime = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "pods", Name: "unbound_time_seconds",
		Help: "The time from pod creation until the pod is bound.",
	}, []string{"name", "namespace"})
)

func init() {
	crmetrics.Registry.MustRegister(podState, podStartupDuration, podUnstartedTime, podBoundDuration, podUnboundTime)
}

// pendingRefresh is how often the time a pod has waited is refreshed while it waits.
const pendingRefresh = 30 * time.Second

// PodController keeps the per-pod metrics: state, and how long pods wait to bind and to start.
// A pod's bind and start durations are observed when this controller saw the pod before the
// step, so a pod that bound while the controller was down is not counted.
type PodController struct {
	client client.Client
	clock  clock.PassiveClock

	mu        sync.Mutex
	labels    map[types.NamespacedName]prometheus.Labels // last karpenter_pods_state series
	unbound   map[types.NamespacedName]bool              // seen before it was bound
	unstarted map[types.NamespacedName]bool              // seen before it was ready
}

// NewPodController returns a PodController; clk defaults to the real clock.
func NewPodController(c client.Client, clk clock.PassiveClock) *PodController {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &PodController{client: c, clock: clk, labels: map[types.NamespacedName]prometheus.Labels{},
		unbound: map[types.NamespacedName]bool{}, unstarted: map[types.NamespacedName]bool{}}
}

// SetupWithManager watches pods.
func (c *PodController) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named(PodControllerName).For(&corev1.Pod{}).Complete(c)
}

// Reconcile updates the metrics of one pod.
func (c *PodController) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pod := &corev1.Pod{}
	if err := c.client.Get(ctx, req.NamespacedName, pod); err != nil {
		if client.IgnoreNotFound(err) == nil {
			c.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	node := &corev1.Node{}
	if pod.Spec.NodeName != "" {
		if err := c.client.Get(ctx, types.NamespacedName{Name: pod.Spec.NodeName}, node); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("getting node %s: %w", pod.Spec.NodeName, err)
		}
	}
	if c.record(pod, node) {
		return ctrl.Result{RequeueAfter: pendingRefresh}, nil
	}
	return ctrl.Result{}, nil
}

// record updates pod's metrics and reports whether it is still waiting (unbound or unstarted).
func (c *PodController) record(pod *corev1.Pod, node *corev1.Node) bool {
	key := client.ObjectKeyFromObject(pod)
	c.mu.Lock()
	defer c.mu.Unlock()
	labels := podStateLabels(pod, node)
	if old, ok := c.labels[key]; ok && !equalLabels(old, labels) {
		podState.Delete(old)
	}
	podState.With(labels).Set(1)
	c.labels[key] = labels

	series := prometheus.Labels{"name": pod.Name, "namespace": pod.Namespace}
	now := c.clock.Now()
	waiting := false
	scheduled := podCondition(pod, corev1.PodScheduled)
	switch {
	case scheduling.PodFinished(pod):
		podUnboundTime.Delete(series)
		delete(c.unbound, key)
	case scheduled == nil || scheduled.Status != corev1.ConditionTrue:
		podUnboundTime.With(series).Set(now.Sub(pod.CreationTimestamp.Time).Seconds())
		c.unbound[key] = true
		waiting = true
	case c.unbound[key]:
		podUnboundTime.Delete(series)
		podBoundDuration.Observe(scheduled.LastTransitionTime.Sub(pod.CreationTimestamp.Time).Seconds())
		delete(c.unbound, key)
	}
	ready := podCondition(pod, corev1.PodReady)
	switch {
	case scheduling.PodFinished(pod):
		podUnstartedTime.Delete(series)
		delete(c.unstarted, key)
	case ready == nil || ready.Status != corev1.ConditionTrue:
		podUnstartedTime.With(series).Set(now.Sub(pod.CreationTimestamp.Time).Seconds())
		c.unstarted[key] = true
		waiting = true
	case c.unstarted[key]:
		podUnstartedTime.Delete(series)
		podStartupDuration.Observe(ready.LastTransitionTime.Sub(pod.CreationTimestamp.Time).Seconds())
		delete(c.unstarted, key)
	}
	return waiting
}

// forget drops the series of a deleted pod.
func (c *PodController) forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.labels[key]; ok {
		podState.Delete(old)
	}
	series := prometheus.Labels{"name": key.Name, "namespace": key.Namespace}
	podUnboundTime.Delete(series)
	podUnstartedTime.Delete(series)
	delete(c.labels, key)
	delete(c.unbound, key)
	delete(c.unstarted, key)
}

func podStateLabels(pod *corev1.Pod, node *corev1.Node) prometheus.Labels {
	owner := ""
	if len(pod.OwnerReferences) > 0 {
		ref := pod.OwnerReferences[0]
		owner = fmt.Sprintf("/apis/%s/namespaces/%s/%ss/%s", ref.APIVersion, pod.Namespace, strings.ToLower(ref.Kind), ref.Name)
	}
	ready := podCondition(pod, corev1.PodReady)
	return prometheus.Labels{
		"name":          pod.Name,
		"namespace":     pod.Namespace,
		"owner":         owner,
		"node":          pod.Spec.NodeName,
		"nodepool":      node.Labels[karpv1.NodePoolLabelKey],
		"zone":          node.Labels[corev1.LabelTopologyZone],
		"arch":          node.Labels[corev1.LabelArchStable],
		"capacity_type": node.Labels[karpv1.CapacityTypeLabelKey],
		"instance_type": node.Labels[corev1.LabelInstanceTypeStable],
		"phase":         string(pod.Status.Phase),
		"ready":         fmt.Sprint(ready != nil && ready.Status == corev1.ConditionTrue),
	}
}

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func equalLabels(a, b prometheus.Labels) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
