package lifecycle

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Lifecycle phases a NodeClaim can time out in.
const (
	phaseRegistration   = "registration"   // not registered within the liveness TTL of creation
	phaseInitialization = "initialization" // registered, not initialized within the initialization TTL
)

// timedOutTotal counts NodeClaims deleted because a lifecycle phase ran out of time.
var timedOutTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: "joinery",
	Subsystem: "nodeclaims",
	Name:      "lifecycle_timeouts_total",
	Help:      "NodeClaims deleted because they did not register within the liveness TTL of their creation (phase registration) or did not initialize in time after registering (phase initialization), by owning NodePool.",
}, []string{"phase", "nodepool"})

// nodesCreatedTotal counts Nodes registered to a NodeClaim, once per Node (Karpenter's
// karpenter_nodes_created_total).
var nodesCreatedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: "karpenter",
	Subsystem: "nodes",
	Name:      "created_total",
	Help:      "Number of nodes created in total by Karpenter. Labeled by owning nodepool and zone.",
}, []string{"nodepool", "zone"})

func init() {
	crmetrics.Registry.MustRegister(timedOutTotal, nodesCreatedTotal)
}
