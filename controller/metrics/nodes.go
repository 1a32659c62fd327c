package metrics

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/scheduling"
)

// nodeLabelNames are the labels of the per-node gauges: Karpenter's node name and phase, and
// the well-known labels every provider sets, in snake_case (Karpenter adds each provider's own
// well-known labels too; joinery keeps the set fixed so dashboards work on every provider).
var nodeLabelNames = []string{"node_name", "nodepool", "arch", "os", "capacity_type", "instance_type", "region", "zone", "phase"}

// nodeResourceLabelNames adds the resource a sample counts.
var nodeResourceLabelNames = []string{"node_name", "nodepool", "arch", "os", "capacity_type", "instance_type", "region", "zone", "phase", "resource_type"}

// wellKnownNodeLabels map the node labels behind nodeLabelNames[1:8].
var wellKnownNodeLabels = []string{karpv1.NodePoolLabelKey, corev1.LabelArchStable, corev1.LabelOSStable, karpv1.CapacityTypeLabelKey,
	corev1.LabelInstanceTypeStable, corev1.LabelTopologyRegion, corev1.LabelTopologyZone}

var (
	nodeAllocatable = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "nodes", Name: "allocatable",
		Help: "Node allocatable are the resources allocatable by nodes.",
	}, nodeResourceLabelNames)
	nodePodRequests = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "nodes", Name: "total_pod_requests",
		Help: "Node total pod requests are the resources requested by pods bound to nodes, including the DaemonSet pods.",
	}, nodeResourceLabelNames)
	nodePodLimits = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "nodes", Name: "total_pod_limits",
		Help: "Node total pod limits are the resources specified by pod limits, including the DaemonSet pods.",
	}, nodeResourceLabelNames)
	nodeDaemonRequests = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "nodes", Name: "total_daemon_requests",
		Help: "Node total daemon requests are the resource requested by DaemonSet pods bound to nodes.",
	}, nodeResourceLabelNames)
	nodeDaemonLimits = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "nodes", Name: "total_daemon_limits",
		Help: "Node total daemon limits are the resources specified by DaemonSet pod limits.",
	}, nodeResourceLabelNames)
	nodeSystemOverhead = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "nodes", Name: "system_overhead",
		Help: "Node system daemon overhead are the resources reserved for system overhead, the difference between the node's capacity and allocatable values are reported by the status.",
	}, nodeResourceLabelNames)
	nodeCurrentLifetime = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "nodes", Name: "current_lifetime_seconds",
		Help: "Node age in seconds",
	}, nodeLabelNames)
	clusterUtilization = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "cluster", Name: "utilization_percent",
		Help: "Utilization of allocatable resources by pod requests",
	}, []string{"resource_type"})
)

func init() {
	crmetrics.Registry.MustRegister(nodeAllocatable, nodePodRequests, nodePodLimits, nodeDaemonRequests,
		nodeDaemonLimits, nodeSystemOverhead, nodeCurrentLifetime, clusterUtilization)
}

// nodeUsage is what the pods bound to one node ask for.
type nodeUsage struct {
	requests, limits, daemonRequests, daemonLimits corev1.ResourceList
}

// addPod counts pod on its node's usage; finished pods hold nothing.
func (u *nodeUsage) addPod(pod *corev1.Pod) {
	if scheduling.PodFinished(pod) {
		return
	}
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	u.requests = scheduling.Merge(u.requests, requests)
	u.limits = scheduling.Merge(u.limits, limits)
	if scheduling.PodOwnedByDaemonSet(pod) {
		u.daemonRequests = scheduling.Merge(u.daemonRequests, requests)
		u.daemonLimits = scheduling.Merge(u.daemonLimits, limits)
	}
}

// recordNodes sets the per-node gauges of the nodes joinery manages (those of a NodePool)
// and the cluster's utilization over them, replacing the previous samples.
func recordNodes(nodes []corev1.Node, usage map[string]*nodeUsage, now time.Time) {
	for _, g := range []*prometheus.GaugeVec{nodeAllocatable, nodePodRequests, nodePodLimits, nodeDaemonRequests, nodeDaemonLimits, nodeSystemOverhead, nodeCurrentLifetime, clusterUtilization} {
		g.Reset()
	}
	allocatable, requested := corev1.ResourceList{}, corev1.ResourceList{}
	for i := range nodes {
		node := &nodes[i]
		if node.Labels[karpv1.NodePoolLabelKey] == "" {
			continue
		}
		labels := nodeLabels(node)
		u := usage[node.Name]
		if u == nil {
			u = &nodeUsage{}
		}
		for gauge, list := range map[*prometheus.GaugeVec]corev1.ResourceList{
			nodeAllocatable:    node.Status.Allocatable,
			nodePodRequests:    u.requests,
			nodePodLimits:      u.limits,
			nodeDaemonRequests: u.daemonRequests,
			nodeDaemonLimits:   u.daemonLimits,
			nodeSystemOverhead: scheduling.Subtract(node.Status.Capacity, node.Status.Allocatable),
		} {
			for name, q := range list {
				gauge.With(withResource(labels, name)).Set(quantity(name, q))
			}
		}
		nodeCurrentLifetime.With(labels).Set(now.Sub(node.CreationTimestamp.Time).Seconds())
		allocatable = scheduling.Merge(allocatable, node.Status.Allocatable)
		requested = scheduling.Merge(requested, u.requests)
	}
	for name, total := range allocatable {
		if total.IsZero() {
			continue
		}
		used := requested[name]
		clusterUtilization.WithLabelValues(resourceType(name)).Set(100 * quantity(name, used) / quantity(name, total))
	}
}

func nodeLabels(node *corev1.Node) prometheus.Labels {
	labels := prometheus.Labels{"node_name": node.Name, "phase": string(node.Status.Phase)}
	for i, key := range wellKnownNodeLabels {
		labels[nodeLabelNames[i+1]] = node.Labels[key]
	}
	return labels
}

func withResource(labels prometheus.Labels, name corev1.ResourceName) prometheus.Labels {
	out := make(prometheus.Labels, len(labels)+1)
	for k, v := range labels {
		out[k] = v
	}
	out["resource_type"] = resourceType(name)
	return out
}

// resourceType is a resource name as a label value, Karpenter's way: lower case, dashes as
// underscores (ephemeral_storage, nvidia.com/gpu).
func resourceType(name corev1.ResourceName) string {
	return strings.ReplaceAll(strings.ToLower(string(name)), "-", "_")
}

// quantity is q as a float: cores for CPU, plain units (bytes, counts) for the rest.
func quantity(name corev1.ResourceName, q resource.Quantity) float64 {
	if name == corev1.ResourceCPU {
		return float64(q.MilliValue()) / 1000
	}
	return float64(q.Value())
}
