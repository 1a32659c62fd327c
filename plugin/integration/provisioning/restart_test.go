package provisioning

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/joinery-dev/joinery/simulation"
)

// TestNoDuplicateNodeClaimAfterRestart: pods planned onto a NodeClaim that is still launching
// are not planned again by a restarted scheduler, which rebuilds its plan from the NodeClaims
// in the cluster; a new pod joins the launching NodeClaim when it fits there.
func TestNoDuplicateNodeClaimAfterRestart(t *testing.T) {
	e := testEnv(t)
	ns := e.newNamespace(t)
	e.create(t, ns, nodePool("default"))
	before := e.createPods(t, ns, pods(2, "before", "1", "1Gi")...)
	stop := e.startScheduler(t, ns, nil)
	o := e.awaitOutcome(t, ns, before, nil)
	o.wantClaims(t, 1)
	launching := o.claims[0]
	e.verifyFidelity(t)
	stop()

	// The new scheduler sees the two pods Unschedulable again, and a third.
	after := e.createPods(t, ns, pod("after", "1", "1Gi"))
	e.startScheduler(t, ns, nil)
	o = e.awaitOutcome(t, ns, append(before, after...), nil)
	o.wantClaims(t, 1)
	nc := o.claims[0]
	if nc.Name != launching.Name {
		t.Fatalf("NodeClaim %s after the restart, want the launching %s", nc.Name, launching.Name)
	}
	want := []types.UID{before[0].UID, before[1].UID, after[0].UID}
	got := simulation.PlannedPods(nc)
	if len(got) != len(want) {
		t.Errorf("NodeClaim %s plans %v, want %v", nc.Name, got, want)
	}
	for _, uid := range want {
		if !slices.Contains(got, uid) {
			t.Errorf("NodeClaim %s plans %v, want %v", nc.Name, got, want)
		}
	}
	// The launching NodeClaim was published for two pods; its spec is what it was.
	if got, want := instanceTypes(nc), instanceTypes(launching); len(got) != len(want) {
		t.Errorf("the launching NodeClaim's instance types changed: %v, were %v", got, want)
	}
	e.verifyFidelity(t)
}
