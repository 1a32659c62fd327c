package interruption

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// capacityReservationWarning has the shape of EventBridge's
// aws.ec2@EC2CapacityReservationInstanceInterruptionWarning event.
const capacityReservationWarning = `{
  "version": "0",
  "id": "1e5527d7-bb36-4607-3370-4164db56a40e",
  "detail-type": "EC2 Capacity Reservation Instance Interruption Warning",
  "source": "aws.ec2",
  "account": "123456789012",
  "time": "2025-06-18T12:00:00Z",
  "region": "us-east-1",
  "resources": ["arn:aws:ec2:us-east-1:123456789012:instance/i-0123456789abcdef0"],
  "detail": {
    "instance-id": "i-0123456789abcdef0",
    "instance-action": "terminate"
  }
}`

func TestParseCapacityReservationInterruption(t *testing.T) {
	tests := []struct {
		name          string
		body          string
		wantKind      Kind
		wantInstances []string
		wantErr       error
	}{
		{name: "interruption warning", body: capacityReservationWarning, wantKind: CapacityReservationInterrupted, wantInstances: []string{"i-0123456789abcdef0"}},
		{name: "from another source is no action", body: strings.ReplaceAll(capacityReservationWarning, `"source": "aws.ec2"`, `"source": "aws.health"`), wantKind: NoOp},
		{name: "without an instance", body: strings.ReplaceAll(capacityReservationWarning, `"instance-id": "i-0123456789abcdef0",`, ""), wantErr: ErrMalformed},
		{name: "with a non-instance id", body: strings.ReplaceAll(capacityReservationWarning, `"instance-id": "i-0123456789abcdef0"`, `"instance-id": "cr-0123"`), wantErr: ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, err := Parse(tt.body)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Parse = %+v, %v; want %v", msg, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if msg.Kind != tt.wantKind {
				t.Errorf("kind = %s, want %s", msg.Kind, tt.wantKind)
			}
			if tt.wantKind != NoOp && !slices.Equal(msg.InstanceIDs, tt.wantInstances) {
				t.Errorf("instances = %v, want %v", msg.InstanceIDs, tt.wantInstances)
			}
		})
	}
}

// The status kinds are never parsed from the queue, but they are message types of the
// interruption metrics, so Kinds lists them.
func TestKindsListKarpentersMessageTypes(t *testing.T) {
	for _, k := range []Kind{"spot_interrupted", "rebalance_recommendation", "scheduled_change", "instance_stopped", "instance_terminated",
		"capacity_reservation_interrupted", "instance_status", "system_status", "event_status", "no_op"} {
		if !slices.Contains(Kinds, k) {
			t.Errorf("Kinds lacks %s", k)
		}
	}
}
