package integration

import (
	"fmt"
	"testing"

	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// driftEvaluations is Karpenter's histogram of the disruption methods' evaluations; its sample
// count for the drift method counts the loop's passes.
const driftEvaluations = "karpenter_voluntary_disruption_decision_evaluation_duration_seconds"

// drifts returns how many times a loop of this process has evaluated the drift method.
func drifts(t *testing.T) uint64 {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering metrics: %v", err)
	}
	var n uint64
	for _, f := range families {
		if f.GetName() != driftEvaluations {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "method" && l.GetValue() == "drift" {
					n += m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return n
}

// awaitPasses waits until the running loop has evaluated the drift method n more times: it
// looked at the cluster again, for a test asserting that looking changed nothing.
func awaitPasses(t *testing.T, n uint64) {
	t.Helper()
	before := drifts(t)
	await(t, fmt.Sprintf("%d more passes of the loop", n), func() bool { return drifts(t) >= before+n })
}
