package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
)

var (
	nodePoolLimit = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "nodepools", Name: "limit",
		Help: "Limits specified on the nodepool that restrict the quantity of resources provisioned. Labeled by nodepool name and resource type.",
	}, []string{"nodepool", "resource_type"})
	nodePoolUsage = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "nodepools", Name: "usage",
		Help: "The amount of resources that have been provisioned for a nodepool (its status.resources). Labeled by nodepool name and resource type.",
	}, []string{"nodepool", "resource_type"})
	nodePoolCost = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "nodepools", Name: "cost_total",
		Help: "Total cost per hour of the nodepool's NodeClaims from Karpenter's perspective: the price of each one's offering (instance type, zone, capacity type). Units are the cloud provider's. Not an authoritative source for billing. Labeled by nodepool.",
	}, []string{"nodepool"})
)

func init() {
	crmetrics.Registry.MustRegister(nodePoolLimit, nodePoolUsage, nodePoolCost)
}

// recordNodePools sets the NodePool gauges, replacing the previous samples. Prices come from
// the cloud provider's instance types of each NodePool that has NodeClaims.
func recordNodePools(ctx context.Context, cp cloudprovider.CloudProvider, pools []karpv1.NodePool, claims []karpv1.NodeClaim) {
	for _, g := range []*prometheus.GaugeVec{nodePoolLimit, nodePoolUsage, nodePoolCost} {
		g.Reset()
	}
	byPool := map[string][]*karpv1.NodeClaim{}
	for i := range claims {
		nc := &claims[i]
		if pool := nc.Labels[karpv1.NodePoolLabelKey]; pool != "" && nc.DeletionTimestamp.IsZero() {
			byPool[pool] = append(byPool[pool], nc)
		}
	}
	for i := range pools {
		np := &pools[i]
		for name, q := range np.Spec.Limits {
			nodePoolLimit.WithLabelValues(np.Name, resourceType(name)).Set(quantity(name, q))
		}
		for name, q := range np.Status.Resources {
			nodePoolUsage.WithLabelValues(np.Name, resourceType(name)).Set(quantity(name, q))
		}
		cost := 0.0
		if len(byPool[np.Name]) > 0 {
			types, err := cp.GetInstanceTypes(ctx, np)
			if err != nil {
				log.FromContext(ctx).V(1).Info("no prices for the nodepool's cost", "NodePool", map[string]string{"name": np.Name}, "error", err.Error())
				continue
			}
			for _, nc := range byPool[np.Name] {
				cost += price(types, nc)
			}
		}
		nodePoolCost.WithLabelValues(np.Name).Set(cost)
	}
}

// price is the hourly price of nc's offering, or 0 when nc has not launched or its offering is
// unknown.
func price(types []*cloudprovider.InstanceType, nc *karpv1.NodeClaim) float64 {
	name, zone, capacityType := nc.Labels[corev1.LabelInstanceTypeStable], nc.Labels[corev1.LabelTopologyZone], nc.Labels[karpv1.CapacityTypeLabelKey]
	for _, it := range types {
		if it.Name != name {
			continue
		}
		for _, o := range it.Offerings {
			if o.Requirements.Get(corev1.LabelTopologyZone).Has(zone) && o.Requirements.Get(karpv1.CapacityTypeLabelKey).Has(capacityType) {
				return o.Price
			}
		}
	}
	return 0
}
