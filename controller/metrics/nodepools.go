package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// The NodePool's cost, karpenter_nodepools_cost_total, is controller/cost's: it prices
// NodeClaims once for that gauge and joinery_nodepool_cost_per_hour.
var (
	nodePoolLimit = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "nodepools", Name: "limit",
		Help: "Limits specified on the nodepool that restrict the quantity of resources provisioned. Labeled by nodepool name and resource type.",
	}, []string{"nodepool", "resource_type"})
	nodePoolUsage = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "nodepools", Name: "usage",
		Help: "The amount of resources that have been provisioned for a nodepool (its status.resources). Labeled by nodepool name and resource type.",
	}, []string{"nodepool", "resource_type"})
)

func init() {
	crmetrics.Registry.MustRegister(nodePoolLimit, nodePoolUsage)
}

// recordNodePools sets the NodePool gauges, replacing the previous samples.
func recordNodePools(pools []karpv1.NodePool) {
	nodePoolLimit.Reset()
	nodePoolUsage.Reset()
	for i := range pools {
		np := &pools[i]
		for name, q := range np.Spec.Limits {
			nodePoolLimit.WithLabelValues(np.Name, resourceType(name)).Set(quantity(name, q))
		}
		for name, q := range np.Status.Resources {
			nodePoolUsage.WithLabelValues(np.Name, resourceType(name)).Set(quantity(name, q))
		}
	}
}
