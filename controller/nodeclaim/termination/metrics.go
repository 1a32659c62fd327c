package termination

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// durationBuckets reach past an hour: a drain may wait on PDBs up to terminationGracePeriod.
var durationBuckets = []float64{0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400}

// Karpenter's termination metrics.
var (
	nodeClaimsTerminated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "nodeclaims", Name: "terminated_total",
		Help: "Number of nodeclaims terminated in total by Karpenter. Labeled by the owning nodepool, capacity type, and zone.",
	}, []string{"nodepool", "capacity_type", "zone"})
	nodeClaimTerminationDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "karpenter", Subsystem: "nodeclaims", Name: "termination_duration_seconds",
		Help:    "Duration of NodeClaim termination in seconds, from its deletion to the removal of its finalizer. Labeled by the owning nodepool.",
		Buckets: durationBuckets,
	}, []string{"nodepool"})
	instanceTerminationDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "karpenter", Subsystem: "nodeclaims", Name: "instance_termination_duration_seconds",
		Help:    "Duration of CloudProvider Instance termination in seconds, from the first termination call to the provider reporting the instance gone. Labeled by the owning nodepool.",
		Buckets: durationBuckets,
	}, []string{"nodepool"})
	nodesTerminated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "nodes", Name: "terminated_total",
		Help: "Number of nodes terminated in total by Karpenter. Labeled by owning nodepool and zone.",
	}, []string{"nodepool", "zone"})
	nodeTerminationDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "karpenter", Subsystem: "nodes", Name: "termination_duration_seconds",
		Help:    "The time taken between a node's deletion request and the removal of its finalizer. Labeled by owning nodepool.",
		Buckets: durationBuckets,
	}, []string{"nodepool"})
	nodeLifetime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "karpenter", Subsystem: "nodes", Name: "lifetime_duration_seconds",
		Help:    "The lifetime duration of the nodes since creation, observed when their finalizer is removed. Labeled by owning nodepool.",
		Buckets: []float64{60, 300, 600, 1800, 3600, 7200, 14400, 28800, 86400, 172800, 604800, 1209600, 2592000},
	}, []string{"nodepool"})
	nodesDrained = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "nodes", Name: "drained_total",
		Help: "The total number of nodes drained by Karpenter. Labeled by owning nodepool.",
	}, []string{"nodepool"})
	podsDrained = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "pods", Name: "drained_total",
		Help: "The total number of pods drained during node termination by Karpenter, labeled by reason (the NodeClaim's disruption reason, or empty when it was deleted directly).",
	}, []string{"reason"})
	evictionRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "pods", Name: "eviction_requests_total",
		Help: "The total number of pod eviction requests made by Karpenter, labeled by response code.",
	}, []string{"code"})
)

func init() {
	crmetrics.Registry.MustRegister(nodeClaimsTerminated, nodeClaimTerminationDuration, instanceTerminationDuration,
		nodesTerminated, nodeTerminationDuration, nodeLifetime, nodesDrained, podsDrained, evictionRequests)
}

// evictionCode is the HTTP status code of an eviction's answer.
func evictionCode(err error) string {
	if err == nil {
		return "200"
	}
	if status, ok := err.(apierrors.APIStatus); ok {
		return strconv.Itoa(int(status.Status().Code))
	}
	return "500"
}

// disruptionReason is the reason nc is being disrupted, from its DisruptionReason condition.
func disruptionReason(nc *karpv1.NodeClaim) string {
	if nc == nil {
		return ""
	}
	for _, c := range nc.Status.Conditions {
		if c.Type == karpv1.ConditionTypeDisruptionReason && c.Status == "True" {
			return c.Reason
		}
	}
	return ""
}

// once remembers what has been counted or started in this process, so a step that reconciles
// again is not counted twice. It forgets an entry when asked, and is lost on restart, when a
// duration that began before it is not observed rather than observed wrong.
type once struct {
	mu   sync.Mutex
	seen map[types.UID]time.Time
}

// first records uid at now and reports whether it was new.
func (o *once) first(uid types.UID, now time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.seen == nil {
		o.seen = map[types.UID]time.Time{}
	}
	if _, ok := o.seen[uid]; ok {
		return false
	}
	o.seen[uid] = now
	return true
}

// forget drops uid and returns when it was first recorded.
func (o *once) forget(uid types.UID) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	at, ok := o.seen[uid]
	delete(o.seen, uid)
	return at, ok
}

// Process-wide records shared by both finalizer controllers.
var (
	// instanceTerminations: when this process first asked the provider to terminate a
	// NodeClaim's instance, by the NodeClaim's UID.
	instanceTerminations once
	// drainedNodes: Nodes whose drain completed, by UID.
	drainedNodes once
)

// nodeLabels are the nodepool and zone label values of a node.
func nodeLabels(node *corev1.Node) (nodepool, zone string) {
	return node.Labels[karpv1.NodePoolLabelKey], node.Labels[corev1.LabelTopologyZone]
}
