package disruption

import (
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// Karpenter's metric names and labels. Reason label values are snake_case, as Karpenter's
// since 1.2 (drifted, empty, underutilized, expired, ...).
var (
	decisionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "voluntary_disruption", Name: "decisions_total",
		Help: "Disruption decisions made, by decision (delete, replace), reason and consolidation type.",
	}, []string{"decision", "reason", "consolidation_type"})
	eligibleNodes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "voluntary_disruption", Name: "eligible_nodes",
		Help: "Nodes eligible for disruption by the method of the reason, at the last evaluation.",
	}, []string{"reason"})
	evaluationDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "karpenter", Subsystem: "voluntary_disruption", Name: "decision_evaluation_duration_seconds",
		Help:    "Time one disruption method took to evaluate its candidates, in seconds.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	}, []string{"method", "consolidation_type"})
	allowedDisruptions = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "nodepools", Name: "allowed_disruptions",
		Help: "Nodes of the NodePool that may still be disrupted for the reason, by its budgets.",
	}, []string{"nodepool", "reason"})
	nodeClaimsCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "nodeclaims", Name: "created_total",
		Help: "Number of nodeclaims created in total by Karpenter. Labeled by reason the nodeclaim was created (here the disruption reason or method its replacement is for), the owning nodepool, and if min values was relaxed for this nodeclaim.",
	}, []string{"reason", "nodepool", "min_values_relaxed"})
	nodesConsumingBudgets = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "nodepools", Name: "nodes_consuming_budgets",
		Help: "The number of nodes consuming the budget of a nodepool at a point in time (being deleted, chosen for disruption, or not ready). Labeled by NodePool.",
	}, []string{"nodepool"})
	disruptedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "nodeclaims", Name: "disrupted_total",
		Help: "NodeClaims disrupted, by reason, NodePool and capacity type.",
	}, []string{"reason", "nodepool", "capacity_type"})
	consolidationTimeouts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "consolidation", Name: "timeouts_total",
		Help: "Consolidation decisions that ran out of their time budget, by consolidation type.",
	}, []string{"consolidation_type"})
	failedValidations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "voluntary_disruption", Name: "failed_validations_total",
		Help: "Disruption commands dropped because they no longer held after the validation delay, by consolidation type.",
	}, []string{"consolidation_type"})
	consolidationScore = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "karpenter", Subsystem: "consolidation", Name: "score",
		Help:    "Score of balanced consolidation moves. Labeled by decision, NodePool, and policy.",
		Buckets: []float64{0.1, 0.25, 0.5, 1, 2, 5, 10, 25, 50, 100},
	}, []string{"decision", "nodepool", "policy"})
	consolidationMoves = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "consolidation", Name: "moves_total",
		Help: "Number of consolidation moves, approved (executed) or rejected by the Balanced score. Labeled by decision, NodePool, and policy.",
	}, []string{"decision", "nodepool", "policy"})
	// UnhealthyDisruptedTotal counts NodeClaims node repair replaced, by the condition that
	// made the node unhealthy.
	UnhealthyDisruptedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "nodeclaims", Name: "unhealthy_disrupted_total",
		Help: "NodeClaims disrupted because their node was unhealthy, by condition, NodePool and capacity type.",
	}, []string{"condition", "nodepool", "capacity_type"})
)

func init() {
	crmetrics.Registry.MustRegister(decisionsTotal, consolidationTimeouts, consolidationScore, consolidationMoves, failedValidations, eligibleNodes, evaluationDuration, allowedDisruptions, nodesConsumingBudgets, nodeClaimsCreated, disruptedTotal, UnhealthyDisruptedTotal)
}

// MetricReason turns a reason (Drifted, Empty, Expired) into its metric label value.
func MetricReason(reason string) string {
	var b strings.Builder
	for i, r := range reason {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// recordCreated counts repl, a replacement created for reason (Drifted, expiration, ...).
func recordCreated(reason string, repl *karpv1.NodeClaim) {
	_, relaxed := repl.Annotations[karpv1.NodeClaimMinValuesRelaxedAnnotationKey]
	nodeClaimsCreated.WithLabelValues(MetricReason(reason), repl.Labels[karpv1.NodePoolLabelKey], strconv.FormatBool(relaxed)).Inc()
}

// RecordDisrupted counts nc as disrupted for reason (Drifted, Empty, Expired, Unhealthy, ...).
func RecordDisrupted(reason string, nc *karpv1.NodeClaim) {
	disruptedTotal.WithLabelValues(MetricReason(reason), nc.Labels[karpv1.NodePoolLabelKey], nc.Labels[karpv1.CapacityTypeLabelKey]).Inc()
}
