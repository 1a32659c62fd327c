package disruption

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// predictCPU predicts cpu for every pod it is asked about.
type predictCPU string

func (p predictCPU) Predict(pod *corev1.Pod) bool {
	pod.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(string(p))
	return true
}

// TestSimulationUsesPredictedRequests: a large node running one 500m pod is replaced by a
// small one; when that pod is predicted to come back asking 3 cpu, small (2 cpu) is no
// replacement, and the cluster's own pod object is left alone.
func TestSimulationUsesPredictedRequests(t *testing.T) {
	for _, tt := range []struct {
		name      string
		predictor RequestPredictor
		smallOK   bool
	}{
		{name: "actual requests", smallOK: true},
		{name: "predicted requests", predictor: predictCPU("3")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			its := testCatalog(t, 0)
			objs := []client.Object{testNodePool("default", onDemandOnly)}
			objs = append(objs, pair(testNode("a", "default", typed(its, "large", "on-demand")))...)
			objs = append(objs, cpuPod("vpa", "node-a", "500m"))
			cluster, _ := loadCluster(t, objs...)
			sim := newSolverSimulator(t, its)
			if tt.predictor != nil {
				sim.SetRequestPredictor(tt.predictor)
			}
			m := &SingleNodeConsolidation{Consolidation: Consolidation{Simulator: sim, InstanceTypes: benchTypes(its)}}
			cands, _ := cluster.Candidates(m.Reason(), m.Class())
			allowed, _ := cluster.Allowed(m.Reason(), epoch)
			cmd, blocked, err := m.ComputeCommand(context.Background(), cluster, allowed, cands)
			if err != nil {
				t.Fatal(err)
			}
			if cmd == nil || cmd.Decision() != DecisionReplace {
				t.Fatalf("command %v (blocked %+v), want a replace", cmd, blocked)
			}
			types := replacementTypes(cmd.Replacements[0])
			if got := slices.Contains(types, "small"); got != tt.smallOK {
				t.Errorf("replacement types %v: small allowed = %t, want %t", types, got, tt.smallOK)
			}
			for _, p := range cluster.Pods {
				if q := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; p.Name == "vpa" && q.String() != "500m" {
					t.Errorf("the cluster's pod was changed to %s", q.String())
				}
			}
		})
	}
}

// rejectVolatile rejects every command and records the pods it was asked about.
type rejectVolatile struct{ asked []string }

func (r *rejectVolatile) Verify(_ context.Context, pods []*corev1.Pod) (string, error) {
	for _, p := range pods {
		r.asked = append(r.asked, p.Name)
	}
	return "volatile requests of ReplicaSet default/vpa changed", nil
}

// TestStepRejectsOnVolatileMismatch: a command whose fresh dry-run disagrees is not executed,
// and its candidate gets the VolatileRequestsChanged event.
func TestStepRejectsOnVolatileMismatch(t *testing.T) {
	its := testCatalog(t, 0)
	objs := []client.Object{testNodePool("default", onDemandOnly)}
	objs = append(objs, pair(testNode("a", "default", typed(its, "large", "on-demand")))...)
	objs = append(objs, cpuPod("vpa", "node-a", "500m"))
	c := newClient(t, objs...)
	rec := events.NewFakeRecorder(100)
	verifier := &rejectVolatile{}
	m := &SingleNodeConsolidation{Consolidation: Consolidation{Simulator: newSolverSimulator(t, its), InstanceTypes: benchTypes(its)}}
	ctrl := New(c, c, rec, nil, []Method{m}, Options{ValidationDelay: time.Millisecond, ConsolidationValidationDelay: time.Millisecond, Volatile: verifier})
	started, err := ctrl.Step(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if started || ctrl.Queue().Running() != 0 {
		t.Errorf("a command started despite the volatile mismatch")
	}
	if !slices.Equal(verifier.asked, []string{"vpa"}) {
		t.Errorf("verifier asked about %v, want [vpa]", verifier.asked)
	}
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		if strings.Contains(e, EventVolatileRequestsChanged) {
			got = append(got, e)
		}
	}
	if len(got) != 2 || !strings.Contains(got[0], "ReplicaSet default/vpa changed") {
		t.Errorf("events %q, want VolatileRequestsChanged on the node and its NodeClaim", got)
	}
}
