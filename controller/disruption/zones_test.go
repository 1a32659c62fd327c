package disruption

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// shiftedZones suspends disruption in the zones it lists, as the AWS provider does for zones
// under an ARC zonal shift.
type shiftedZones map[string]bool

func (s shiftedZones) DisruptionSuspended(node *corev1.Node) string {
	if zone := node.Labels[corev1.LabelTopologyZone]; s[zone] {
		return "zone " + zone + " is under an active ARC zonal shift"
	}
	return ""
}

func inZone(zone string) ncOption {
	return func(_ *karpv1.NodeClaim, n *corev1.Node) { n.Labels[corev1.LabelTopologyZone] = zone }
}

// TestZoneSuspendsVoluntaryDisruption: a node in a zone the provider suspends is no candidate
// of drift or emptiness while the suspension lasts, and the pass says why with a
// DisruptionBlocked event naming the shift; a node of another zone is disrupted as before, and
// so is the same node once the shift ends.
func TestZoneSuspendsVoluntaryDisruption(t *testing.T) {
	tests := []struct {
		name   string
		method Method
		opts   []ncOption
	}{
		{name: "drift", method: &Drift{Simulator: &fakeSimulator{}}, opts: []ncOption{drifted}},
		{name: "emptiness", method: &Emptiness{}},
	}
	for _, tt := range tests {
		for _, zone := range []string{"us-west-2a", "us-west-2b"} {
			t.Run(tt.name+" in "+zone, func(t *testing.T) {
				suspended := zone == "us-west-2a"
				c := newClient(t, objects(testNodePool("default"), pair(testNode("a", "default", append(tt.opts, inZone(zone))...)))...)
				rec := events.NewFakeRecorder(100)
				zones := shiftedZones{"us-west-2a": true}
				ctrl := New(c, c, rec, clocktesting.NewFakeClock(epoch), []Method{tt.method}, Options{Zones: zones})
				cluster, err := ctrl.load(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				cmd, res, err := computeMethod(context.Background(), cluster, tt.method, epoch)
				if err != nil {
					t.Fatal(err)
				}
				if got := cmd != nil; got == suspended {
					t.Fatalf("command %v, want one = %t", cmd, !suspended)
				}
				blocked := ""
				for _, b := range res.Blocked {
					blocked += b.Message
				}
				if suspended != strings.Contains(blocked, "zone us-west-2a is under an active ARC zonal shift") {
					t.Errorf("blocked %q, want the shift named = %t", blocked, suspended)
				}
				if !suspended {
					return
				}
				if _, err := ctrl.Step(context.Background()); err != nil {
					t.Fatal(err)
				}
				if evs := matching(drain(rec), EventDisruptionBlocked, "zone us-west-2a is under an active ARC zonal shift"); len(evs) == 0 {
					t.Error("no DisruptionBlocked event names the zonal shift")
				}
				// The shift ends: the node is a candidate again.
				delete(zones, "us-west-2a")
				if cluster, err = ctrl.load(context.Background()); err != nil {
					t.Fatal(err)
				}
				if cmd, _, err := computeMethod(context.Background(), cluster, tt.method, epoch); err != nil || cmd == nil {
					t.Errorf("after the shift ended: command %v, %v, want one", cmd, err)
				}
			})
		}
	}
}
