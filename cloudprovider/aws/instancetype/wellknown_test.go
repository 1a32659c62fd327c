package instancetype

import (
	"testing"

	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/scheduling"
)

func TestWellKnownLabelsRegistered(t *testing.T) {
	for _, k := range []string{
		"karpenter.k8s.aws/instance-family", "karpenter.k8s.aws/instance-gpu-count", "karpenter.k8s.aws/instance-pods",
		"karpenter.k8s.aws/capacity-reservation-id", "karpenter.k8s.aws/capacity-reservation-type", "topology.k8s.aws/zone-id",
	} {
		if !scheduling.IsWellKnownLabel(k) {
			t.Errorf("%s is not well-known", k)
		}
	}
	if got, want := cloudprovider.ReservationIDLabel, "karpenter.k8s.aws/capacity-reservation-id"; got != want {
		t.Errorf("ReservationIDLabel = %q, want %q", got, want)
	}
}
