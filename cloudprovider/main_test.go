package cloudprovider

import (
	"os"
	"testing"
)

// The tests stand in for a provider: their instance types carry a family label, and reserved
// offerings a reservation label the "provider" registers, as a real one does at init.
const (
	testFamilyLabel      = "example.com/instance-family"
	testReservationLabel = "example.com/capacity-reservation-id"
)

func TestMain(m *testing.M) {
	RegisterReservationIDLabel(testReservationLabel)
	os.Exit(m.Run())
}
