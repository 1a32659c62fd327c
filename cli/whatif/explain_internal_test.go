package whatif

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/joinery-dev/joinery/simulation"
)

// TestVerdictsFromThePlansReasons: explain's verdict per NodePool is the plan's structured
// reason, whatever the text of Unschedulable says: here worded so that no parser of it
// would find the NodePools.
func TestVerdictsFromThePlansReasons(t *testing.T) {
	web := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "uid-web"}}
	plan := &simulation.Plan{
		Unschedulable: map[types.UID]string{"uid-web": "nothing fits: a is full, b waits"},
		Reasons: map[types.UID][]simulation.NodePoolReason{"uid-web": {
			{NodePool: "a", Kind: simulation.ReasonLimits, Message: "limits reached", Text: "a is full"},
			{NodePool: "b", Kind: simulation.ReasonNotReady, Message: "is not ready (NodeClassNotReady)", Text: "b waits"},
		}},
	}
	prov, err := (&Cluster{}).describePlan(t.Context(), plan, []*corev1.Pod{web})
	if err != nil {
		t.Fatal(err)
	}
	if len(prov.Pending) != 1 || prov.Pending[0].Reason != plan.Unschedulable["uid-web"] {
		t.Fatalf("pending %+v, want default/web with the plan's text", prov.Pending)
	}
	want := map[string]string{"a": "limits reached", "b": "is not ready (NodeClassNotReady)"}
	if got := prov.Pending[0].verdicts(); !maps.Equal(got, want) {
		t.Errorf("verdicts %v, want %v", got, want)
	}
}
