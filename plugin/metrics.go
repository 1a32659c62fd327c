package plugin

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The plugin's metrics, served with kube-scheduler's own on joinery-scheduler's /metrics.
var (
	// solverPanics counts batches whose planning panicked; their pods are quarantined.
	solverPanics = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "karpenter",
		Subsystem:      "provisioner",
		Name:           "scheduling_simulation_panics_total",
		Help:           "Provisioning batches whose scheduling simulation panicked; the batch's pods are quarantined. Labelled by scheduler profile.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"profile"})
	// planTimeouts counts batches whose planning ran past PlanTimeout.
	planTimeouts = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "karpenter",
		Subsystem:      "provisioner",
		Name:           "scheduling_simulation_timeouts_total",
		Help:           "Provisioning batches whose scheduling simulation ran past the plugin's planTimeout. Labelled by scheduler profile.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"profile"})
)

var registerMetrics sync.Once

// RegisterMetrics registers the plugin's metrics with the registry kube-scheduler serves. The
// plugin factory calls it; calling it again does nothing.
func RegisterMetrics() {
	registerMetrics.Do(func() {
		legacyregistry.MustRegister(solverPanics, planTimeouts, plannedPodsRestored)
	})
}
