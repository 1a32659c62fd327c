package cost

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
)

// Name is the exporter's name in logs.
const Name = "nodepool.cost"

// DefaultInterval is how often the metrics are recomputed.
const DefaultInterval = 30 * time.Second

// joinery's own metrics, labelled as `joinery cost` prints, and Karpenter's NodePool cost
// gauge: one Compute sets them all, so they always agree.
var (
	// karpenter_nodepools_cost_total is kept under Karpenter's name and labels for its
	// dashboards; it is joinery_nodepool_cost_per_hour summed over capacity types and zones.
	nodePoolCost = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "karpenter", Subsystem: "nodepools", Name: "cost_total",
		Help: "Total cost per hour of the nodepool's NodeClaims from Karpenter's perspective: the price of each one's offering (instance type, zone, capacity type; a launching NodeClaim at the offering it would launch with). Units are the cloud provider's. Not an authoritative source for billing. Labeled by nodepool.",
	}, []string{"nodepool"})
	costPerHour = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "joinery", Subsystem: "nodepool", Name: "cost_per_hour",
		Help: "Cost per hour of the NodePool's NodeClaims (launched ones at their offering's price, launching ones at the offering they would launch with), by capacity type and zone.",
	}, []string{"nodepool", "capacity_type", "zone"})
	nodeClaims = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "joinery", Subsystem: "nodepool", Name: "nodeclaims",
		Help: "NodeClaims of the NodePool that are not being deleted, by capacity type and zone.",
	}, []string{"nodepool", "capacity_type", "zone"})
	utilisation = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "joinery", Subsystem: "nodepool", Name: "utilization",
		Help: "Requests of the pods on the NodePool's nodes over their allocatable (0..1), by capacity type, zone and resource (cpu, memory).",
	}, []string{"nodepool", "capacity_type", "zone", "resource"})
	// costTrackerErrors is Karpenter's count of NodeClaims its cost tracking could not price.
	costTrackerErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "karpenter", Subsystem: "nodepools", Name: "cost_tracker_errors_total",
		Help: "Number of errors encountered during cost tracking operations: NodeClaims of the nodepool that a recomputation could not price (no offering of the NodePool's instance types matches their labels or requirements), counted at each recomputation. Labeled by nodepool.",
	}, []string{"nodepool"})
)

func init() {
	crmetrics.Registry.MustRegister(nodePoolCost, costPerHour, nodeClaims, utilisation, costTrackerErrors)
}

// Exporter recomputes the cost metrics every Interval. It is a manager Runnable.
type Exporter struct {
	Client        client.Reader
	InstanceTypes cloudprovider.InstanceTypeLister
	Interval      time.Duration
}

// NeedLeaderElection: every replica reads the same cluster, but one exporter is enough.
func (e *Exporter) NeedLeaderElection() bool { return true }

// Start exports until ctx ends.
func (e *Exporter) Start(ctx context.Context) error {
	interval := e.Interval
	if interval == 0 {
		interval = DefaultInterval
	}
	logger := log.FromContext(ctx).WithName(Name)
	for {
		if err := e.Export(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "exporting cost metrics")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// Export computes the lines once and replaces the metrics with them.
func (e *Exporter) Export(ctx context.Context) error {
	var (
		nps   karpv1.NodePoolList
		ncs   karpv1.NodeClaimList
		nodes corev1.NodeList
		pods  corev1.PodList
	)
	for _, l := range []struct {
		what string
		list client.ObjectList
	}{{"nodepools", &nps}, {"nodeclaims", &ncs}, {"nodes", &nodes}, {"pods", &pods}} {
		if err := e.Client.List(ctx, l.list); err != nil {
			return fmt.Errorf("listing %s: %w", l.what, err)
		}
	}
	var s State
	for i := range nps.Items {
		s.NodePools = append(s.NodePools, &nps.Items[i])
	}
	for i := range ncs.Items {
		s.NodeClaims = append(s.NodeClaims, &ncs.Items[i])
	}
	for i := range nodes.Items {
		s.Nodes = append(s.Nodes, &nodes.Items[i])
	}
	for i := range pods.Items {
		s.Pods = append(s.Pods, &pods.Items[i])
	}
	lines, err := Compute(ctx, NewPricer(e.InstanceTypes, s.NodePools), s)
	if err != nil {
		return err
	}
	nodePoolCost.Reset()
	costPerHour.Reset()
	nodeClaims.Reset()
	utilisation.Reset()
	for pool, perHour := range PerNodePool(s.NodePools, lines) {
		nodePoolCost.WithLabelValues(pool).Set(perHour)
	}
	for _, l := range lines {
		if l.Unpriced > 0 {
			costTrackerErrors.WithLabelValues(l.NodePool).Add(float64(l.Unpriced))
		}
		costPerHour.WithLabelValues(l.NodePool, l.CapacityType, l.Zone).Set(l.PerHour)
		nodeClaims.WithLabelValues(l.NodePool, l.CapacityType, l.Zone).Set(float64(l.NodeClaims))
		utilisation.WithLabelValues(l.NodePool, l.CapacityType, l.Zone, "cpu").Set(l.CPU)
		utilisation.WithLabelValues(l.NodePool, l.CapacityType, l.Zone, "memory").Set(l.Memory)
	}
	return nil
}
