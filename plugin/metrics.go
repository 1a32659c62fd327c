package plugin

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Karpenter's label for the part of Karpenter that scheduled: here always the provisioner.
const metricController = "provisioner"

// durationBuckets suit a batch's planning and a pod's wait for capacity.
var durationBuckets = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600}

// The plugin's metrics, served with kube-scheduler's own on joinery-scheduler's /metrics.
var (
	// solverPanics counts batches whose planning panicked; their pods are quarantined.
	solverPanics = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "joinery",
		Subsystem:      "provisioner",
		Name:           "scheduling_simulation_panics_total",
		Help:           "Provisioning batches whose scheduling simulation panicked; the batch's pods are quarantined. Labelled by scheduler profile.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"profile"})
	// planTimeouts counts batches whose planning ran past PlanTimeout.
	planTimeouts = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "joinery",
		Subsystem:      "provisioner",
		Name:           "scheduling_simulation_timeouts_total",
		Help:           "Provisioning batches whose scheduling simulation ran past the plugin's planTimeout. Labelled by scheduler profile.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"profile"})
	// podsRetried counts pending pods a batch sent back to kube-scheduler because a
	// registered node takes them now (Plan.Retry).
	podsRetried = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "joinery",
		Subsystem:      "provisioner",
		Name:           "pods_retried_on_nodes_total",
		Help:           "Pending pods a provisioning batch sent back to kube-scheduler because a registered, initialized node fits them now, instead of buying capacity for them. Labelled by scheduler profile.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"profile"})
	// missingReplicas is the number of virtual pods the last batch planned for replicas their
	// workload has not created yet (planMissingReplicas).
	missingReplicas = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace:      "joinery",
		Subsystem:      "provisioner",
		Name:           "missing_replicas_planned",
		Help:           "Replicas the last provisioning batch planned capacity for before their workload (a ReplicaSet, StatefulSet or Job) created them, as virtual pods (planMissingReplicas). Labelled by scheduler profile.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"profile"})

	replicaSlotsTaken = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "joinery",
		Subsystem:      "provisioner",
		Name:           "replica_slots_taken_total",
		Help:           "Replicas that, once their workload created them, took the place a batch had planned for them on a NodeClaim before they existed (planMissingReplicas). Labelled by scheduler profile.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"profile"})

	// Karpenter's scheduler metrics, for the provisioning solver.
	schedulingDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace: "karpenter", Subsystem: "scheduler", Name: "scheduling_duration_seconds",
		Help:           "Duration of scheduling simulations used for deprovisioning and provisioning in seconds.",
		Buckets:        durationBuckets,
		StabilityLevel: metrics.ALPHA,
	}, []string{"controller"})
	queueDepth = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: "karpenter", Subsystem: "scheduler", Name: "queue_depth",
		Help:           "The number of pods currently waiting to be scheduled: the pods of the batch being planned, by its scheduling_id.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"controller", "scheduling_id"})
	unfinishedWork = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: "karpenter", Subsystem: "scheduler", Name: "unfinished_work_seconds",
		Help:           "How many seconds of work has been done that is in progress and hasn't been observed by scheduling_duration_seconds.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"controller", "scheduling_id"})
	ignoredPods = metrics.NewGauge(&metrics.GaugeOpts{
		Namespace: "karpenter", Subsystem: "scheduler", Name: "ignored_pods_count",
		Help:           "Number of pods ignored during scheduling by Karpenter: pending pods left out of the last batch while quarantined.",
		StabilityLevel: metrics.ALPHA,
	})
	unschedulablePods = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: "karpenter", Subsystem: "scheduler", Name: "unschedulable_pods_count",
		Help:           "The number of unschedulable Pods: pods of the last batch no NodePool could fit.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"controller"})
	pendingPodsByZone = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: "karpenter", Subsystem: "scheduler", Name: "pending_pods_by_effective_zone_count",
		Help:           "Pending pods of the last batch dimensioned by effective zone constraint: the intersection of the pod's zone signals (nodeSelector and required node affinity, over its alternative terms). Values: a zone name when exactly one zone is allowed, 'flexible' (several zones, or no zone constraint), or 'none' (no zone allowed).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"controller", "zone"})

	// nodeClaimsCreated counts the NodeClaims the plugin created.
	nodeClaimsCreated = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "karpenter", Subsystem: "nodeclaims", Name: "created_total",
		Help:           "Number of nodeclaims created in total by Karpenter. Labeled by reason the nodeclaim was created, the owning nodepool, and if min values was relaxed for this nodeclaim.",
		StabilityLevel: metrics.STABLE,
	}, []string{"reason", "nodepool", "min_values_relaxed"})

	// Karpenter's pod provisioning metrics: times from when the plugin first saw a pod need
	// capacity, and from when a plan first gave it a NodeClaim.
	podSchedulingDecision = metrics.NewHistogram(&metrics.HistogramOpts{
		Namespace: "karpenter", Subsystem: "pods", Name: "scheduling_decision_duration_seconds",
		Help:           "The time it takes for Karpenter to first try to schedule a pod after it's been seen.",
		Buckets:        durationBuckets,
		StabilityLevel: metrics.ALPHA,
	})
	podUndecided = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: "karpenter", Subsystem: "pods", Name: "provisioning_scheduling_undecided_time_seconds",
		Help:           "The time from when Karpenter has seen a pod without making a scheduling decision for the pod. Note: this calculated from a point in memory, not by the pod creation timestamp.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"name", "namespace"})
	podProvisioningBound = metrics.NewHistogram(&metrics.HistogramOpts{
		Namespace: "karpenter", Subsystem: "pods", Name: "provisioning_bound_duration_seconds",
		Help:           "The time from when Karpenter first thinks the pod can schedule until it binds. Note: this calculated from a point in memory, not by the pod creation timestamp.",
		Buckets:        durationBuckets,
		StabilityLevel: metrics.ALPHA,
	})
	podProvisioningUnbound = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: "karpenter", Subsystem: "pods", Name: "provisioning_unbound_time_seconds",
		Help:           "The time from when Karpenter first thinks the pod can schedule until it binds. Note: this calculated from a point in memory, not by the pod creation timestamp.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"name", "namespace"})
	podProvisioningStartup = metrics.NewHistogram(&metrics.HistogramOpts{
		Namespace: "karpenter", Subsystem: "pods", Name: "provisioning_startup_duration_seconds",
		Help:           "The time from when Karpenter first thinks the pod can schedule until the pod is running. Note: this calculated from a point in memory, not by the pod creation timestamp.",
		Buckets:        durationBuckets,
		StabilityLevel: metrics.ALPHA,
	})
	podProvisioningUnstarted = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace: "karpenter", Subsystem: "pods", Name: "provisioning_unstarted_time_seconds",
		Help:           "The time from when Karpenter first thinks the pod can schedule until the pod is running. Note: this calculated from a point in memory, not by the pod creation timestamp.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"name", "namespace"})
)

var registerMetrics sync.Once

// RegisterMetrics registers the plugin's metrics with the registry kube-scheduler serves. The
// plugin factory calls it; calling it again does nothing.
func RegisterMetrics() {
	registerMetrics.Do(func() {
		legacyregistry.MustRegister(solverPanics, planTimeouts, plannedPodsRestored, podsRetried, missingReplicas, replicaSlotsTaken,
			schedulingDuration, queueDepth, unfinishedWork, ignoredPods, unschedulablePods, pendingPodsByZone, nodeClaimsCreated,
			podSchedulingDecision, podUndecided, podProvisioningBound, podProvisioningUnbound, podProvisioningStartup, podProvisioningUnstarted)
	})
}
