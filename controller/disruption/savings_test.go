package disruption

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
)

// TestStepRecordsSavings: a pass sets joinery_nodepool_consolidation_savings_per_hour to the
// chosen command's savings in its NodePool (the candidate's price less the replacement's),
// 0 in every other NodePool, and 0 everywhere when it chooses nothing. The volatile verifier
// rejects the command, so the gauge is shown to be set before validation.
func TestStepRecordsSavings(t *testing.T) {
	its := testCatalog(t, 0)
	tests := []struct {
		name     string
		nodeType string
		podCPU   string
		want     map[string]float64
	}{
		{"large replaced by small", "large", "500m", map[string]float64{
			"default": priceOf(its, "large", "on-demand") - priceOf(its, "small", "on-demand"), "other": 0}},
		{"nothing cheaper", "small", "1500m", map[string]float64{"default": 0, "other": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []client.Object{testNodePool("default", onDemandOnly), testNodePool("other", onDemandOnly)}
			objs = append(objs, pair(testNode("a", "default", typed(its, tt.nodeType, "on-demand")))...)
			objs = append(objs, cpuPod("p", "node-a", tt.podCPU))
			c := newClient(t, objs...)
			m := &SingleNodeConsolidation{Consolidation: Consolidation{Simulator: newSolverSimulator(t, its), InstanceTypes: benchTypes(its)}}
			ctrl := New(c, c, events.NewFakeRecorder(100), nil, []Method{m},
				Options{ConsolidationValidationDelay: time.Millisecond, Volatile: &rejectVolatile{}, InstanceTypes: benchTypes(its)})
			// A stale sample from an earlier pass must go.
			consolidationSavings.WithLabelValues("gone").Set(1)
			if _, err := ctrl.Step(context.Background()); err != nil {
				t.Fatal(err)
			}
			if n := testutil.CollectAndCount(consolidationSavings); n != len(tt.want) {
				t.Errorf("%d series, want %d", n, len(tt.want))
			}
			for np, want := range tt.want {
				if got := testutil.ToFloat64(consolidationSavings.WithLabelValues(np)); !approx(got, want) {
					t.Errorf("savings{nodepool=%q} = %v, want %v", np, got, want)
				}
			}
		})
	}
}

func approx(a, b float64) bool { d := a - b; return d < 1e-9 && d > -1e-9 }

// movingPrices is a catalog whose prices double after each NodePool's first listing, as a
// price update between two listings would move them.
type movingPrices struct {
	its    cloudprovider.InstanceTypes
	listed map[string]int
}

func (m *movingPrices) GetInstanceTypes(_ context.Context, np *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	name := ""
	if np != nil {
		name = np.Name
	}
	m.listed[name]++
	if m.listed[name] == 1 {
		return m.its, nil
	}
	out := make([]*cloudprovider.InstanceType, len(m.its))
	for i, it := range m.its {
		moved := &cloudprovider.InstanceType{Name: it.Name, Requirements: it.Requirements, Capacity: it.Capacity, Overhead: it.Overhead}
		for _, o := range it.Offerings {
			c := *o
			c.Price *= 2
			moved.Offerings = append(moved.Offerings, &c)
		}
		out[i] = moved
	}
	return out, nil
}

// TestSavingsArePricedAsDecided: the savings gauge shows what the command saves at the
// prices consolidation decided it with (the decision's cost.Pricer), not at a second listing
// of the catalog made for the gauge.
func TestSavingsArePricedAsDecided(t *testing.T) {
	its := testCatalog(t, 0)
	objs := []client.Object{testNodePool("default", onDemandOnly)}
	objs = append(objs, pair(testNode("a", "default", typed(its, "large", "on-demand")))...)
	objs = append(objs, cpuPod("p", "node-a", "500m"))
	c := newClient(t, objs...)
	prices := &movingPrices{its: its, listed: map[string]int{}}
	m := &SingleNodeConsolidation{Consolidation: Consolidation{Simulator: newSolverSimulator(t, its), InstanceTypes: prices}}
	ctrl := New(c, c, events.NewFakeRecorder(100), nil, []Method{m},
		Options{ConsolidationValidationDelay: time.Millisecond, Volatile: &rejectVolatile{}, InstanceTypes: prices})
	if _, err := ctrl.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := priceOf(its, "large", "on-demand") - priceOf(its, "small", "on-demand")
	if got := testutil.ToFloat64(consolidationSavings.WithLabelValues("default")); !approx(got, want) {
		t.Errorf("savings{nodepool=default} = %v, want %v (the prices of the decision)", got, want)
	}
}
