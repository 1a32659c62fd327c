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
	decisionsByNodePool = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "voluntary_disruption", Name: "decisions_by_nodepool_total",
		Help: "Number of disruption decisions performed by nodepool: each decision counts once for every NodePool among its candidates. Labeled by nodepool name, disruption decision, reason, and consolidation type.",
	}, []string{"nodepool", "decision", "reason", "consolidation_type"})
	queueFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "voluntary_disruption", Name: "queue_failures_total",
		Help: "The number of times that an enqueued disruption decision failed: the command was rolled back (a step of its start failed, a replacement was lost, or the replacements did not initialize in time). Labeled by decision, reason and consolidation type.",
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
		Namespace: "karpenter", Subsystem: "voluntary_disruption", Name: "consolidation_timeouts_total",
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
	crmetrics.Registry.MustRegister(decisionsTotal, decisionsByNodePool, queueFailures, consolidationTimeouts, consolidationScore, consolidationMoves, failedValidations, eligibleNodes, evaluationDuration, allowedDisruptions, nodesConsumingBudgets, nodeClaimsCreated, disruptedTotal, UnhealthyDisruptedTotal)
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

// recordDecision counts cmd, started by a method of consolidationType, once in
// karpenter_voluntary_disruption_decisions_total and once per NodePool of its candidates in
// karpenter_voluntary_disruption_decisions_by_nodepool_total.
func recordDecision(cmd *Command, consolidationType string) {
	decision, reason := string(cmd.Decision()), MetricReason(cmd.Reason)
	decisionsTotal.WithLabelValues(decision, reason, consolidationType).Inc()
	pools := map[string]bool{}
	for _, c := range cmd.Candidates {
		pools[c.NodeClaim.Labels[karpv1.NodePoolLabelKey]] = true
	}
	for pool := range pools {
		decisionsByNodePool.WithLabelValues(pool, decision, reason, consolidationType).Inc()
	}
}

// queueFailure is the counter of command id, being rolled back, in
// karpenter_voluntary_disruption_queue_failures_total. The labels come from what the cluster
// keeps of the command (its candidates' annotations and its ID's method), so a command resumed
// after a restart is counted alike.
func queueFailure(id string, cands []*karpv1.NodeClaim) prometheus.Counter {
	decision, reason := DecisionDelete, ""
	if len(cands) > 0 {
		reason = MetricReason(cands[0].Annotations[commandReasonAnnotationKey])
		if n, _ := strconv.Atoi(cands[0].Annotations[ReplacementsAnnotationKey]); n > 0 {
			decision = DecisionReplace
		}
	}
	return queueFailures.WithLabelValues(string(decision), reason, consolidationTypeOfCommandID(id))
}

// consolidationTypeOfCommandID is the consolidation type of the method that made command id
// (its ID is the method's name, a dash and a random suffix), or "" for drift and others.
func consolidationTypeOfCommandID(id string) string {
	method := id
	if i := strings.LastIndexByte(id, '-'); i >= 0 {
		method = id[:i]
	}
	for _, m := range GracefulMethods(Consolidation{}) {
		if m.Name() == method {
			return m.ConsolidationType()
		}
	}
	return ""
}
