package disruption

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// TestRecordDecision: a decision counts once in decisions_total and once per NodePool of its
// candidates in decisions_by_nodepool_total.
func TestRecordDecision(t *testing.T) {
	cand := func(name, pool string) *Candidate {
		return &Candidate{NodeClaim: &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: pool}}}}
	}
	cmd := &Command{Reason: karpv1.DisruptionReasonUnderutilized, Candidates: []*Candidate{cand("a", "web"), cand("b", "web"), cand("c", "batch")}}
	total := func() float64 {
		return testutil.ToFloat64(decisionsTotal.WithLabelValues("delete", "underutilized", ConsolidationTypeMulti))
	}
	byPool := func(pool string) float64 {
		return testutil.ToFloat64(decisionsByNodePool.WithLabelValues(pool, "delete", "underutilized", ConsolidationTypeMulti))
	}
	before, web, batch := total(), byPool("web"), byPool("batch")
	recordDecision(cmd, ConsolidationTypeMulti)
	if got := total() - before; got != 1 {
		t.Errorf("decisions_total rose by %v, want 1", got)
	}
	if got := byPool("web") - web; got != 1 {
		t.Errorf("decisions_by_nodepool_total{nodepool=web} rose by %v, want 1 (two candidates, one decision)", got)
	}
	if got := byPool("batch") - batch; got != 1 {
		t.Errorf("decisions_by_nodepool_total{nodepool=batch} rose by %v, want 1", got)
	}
}

func TestConsolidationTypeOfCommandID(t *testing.T) {
	for id, want := range map[string]string{
		"multi-node-consolidation-abcd1234":  ConsolidationTypeMulti,
		"single-node-consolidation-abcd1234": ConsolidationTypeSingle,
		"emptiness-abcd1234":                 ConsolidationTypeEmpty,
		"drift-abcd1234":                     "",
		"drift-1":                            "",
	} {
		if got := consolidationTypeOfCommandID(id); got != want {
			t.Errorf("consolidationTypeOfCommandID(%q) = %q, want %q", id, got, want)
		}
	}
}
