package disruption

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

func TestReplacementTimeoutAndBackoff(t *testing.T) {
	for _, tt := range []struct {
		waiting int
		want    time.Duration
	}{{0, 10 * time.Minute}, {1, 10 * time.Minute}, {2, 11 * time.Minute}, {31, 40 * time.Minute}, {500, time.Hour}} {
		if got := replacementTimeout(DefaultReplacementTimeout, tt.waiting); got != tt.want {
			t.Errorf("replacementTimeout(10m, %d) = %s, want %s", tt.waiting, got, tt.want)
		}
	}
	for _, tt := range []struct {
		n    int
		want time.Duration
	}{{1, 15 * time.Minute}, {2, 30 * time.Minute}, {3, time.Hour}, {5, 4 * time.Hour}, {40, 4 * time.Hour}} {
		if got := rollbackBackoff(tt.n); got != tt.want {
			t.Errorf("rollbackBackoff(%d) = %s, want %s", tt.n, got, tt.want)
		}
	}
}

// TestBackedOffCandidateIsSkipped: a candidate rolled back 10 minutes ago (back-off 15 min) is
// not disrupted again yet, and says why; once the back-off ends it is.
func TestBackedOffCandidateIsSkipped(t *testing.T) {
	backedOff := func(nc *karpv1.NodeClaim, _ *corev1.Node) {
		nc.Annotations = map[string]string{RollbacksAnnotationKey: "1", BackoffAnnotationKey: epoch.Add(5 * time.Minute).Format(time.RFC3339)}
	}
	cluster, _ := loadCluster(t, objects(testNodePool("default", allBudget), pair(testNode("a", "default", drifted, backedOff)), testPod("web", "node-a"))...)
	m := &Drift{Simulator: &fakeSimulator{}}
	cmd, res, err := computeMethod(context.Background(), cluster, m, epoch)
	if err != nil {
		t.Fatal(err)
	}
	if cmd != nil {
		t.Fatalf("command %s during the back-off, want none", cmd)
	}
	if len(res.Blocked) == 0 || !strings.Contains(res.Blocked[0].Message, "backing off until") {
		t.Errorf("blocked %+v, want the back-off", res.Blocked)
	}
	if cmd, _, err = computeMethod(context.Background(), cluster, m, epoch.Add(6*time.Minute)); err != nil || cmd == nil {
		t.Errorf("after the back-off: command %v, err %v; want the drift", cmd, err)
	}
}
