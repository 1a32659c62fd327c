package drift

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metric labels, Karpenter's names.
const (
	metricLabelType     = "type"
	metricLabelNodePool = "nodepool"
)

// driftedTotal counts NodeClaims newly marked drifted, by drift reason and NodePool; a
// NodeClaim that stays drifted across reconciles is counted once.
var driftedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: "joinery",
	Subsystem: "nodeclaims",
	Name:      "drifted_total",
	Help:      "NodeClaims marked drifted, by drift reason (type) and owning NodePool.",
}, []string{metricLabelType, metricLabelNodePool})

func init() {
	crmetrics.Registry.MustRegister(driftedTotal)
}
