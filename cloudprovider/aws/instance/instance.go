package instance

import (
	"fmt"
	"strings"
	"time"
)

// Instance is an EC2 instance joinery launched.
type Instance struct {
	ID           string
	InstanceType string
	Zone         string
	SubnetID     string
	ImageID      string
	PrivateIP    string
	// State is EC2's state name (pending, running, shutting-down, terminated, ...).
	State string
	// CapacityType is joinery's: spot, on-demand or reserved.
	CapacityType          string
	CapacityReservationID string
	SecurityGroupIDs      []string
	// PlacementGroupID and PartitionNumber say where in a placement group the instance runs
	// (the partition only in a partition group; 0 otherwise).
	PlacementGroupID string
	PartitionNumber  int32
	LaunchTime       time.Time
	Tags             map[string]string
}

// ProviderID is the instance's Kubernetes provider ID, aws:///<zone>/<instance-id>.
func (i Instance) ProviderID() string { return ProviderID(i.Zone, i.ID) }

// ProviderID formats an EC2 provider ID.
func ProviderID(zone, id string) string { return "aws:///" + zone + "/" + id }

// ParseProviderID returns the zone and instance id of aws:///<zone>/<instance-id> (the zone may
// be empty, as in aws:////i-...).
func ParseProviderID(providerID string) (zone, id string, err error) {
	rest, ok := strings.CutPrefix(providerID, "aws:///")
	if !ok {
		return "", "", fmt.Errorf("provider ID %q is not aws:///<zone>/<instance-id>", providerID)
	}
	zone, id, ok = strings.Cut(rest, "/")
	if !ok || !strings.HasPrefix(id, "i-") || strings.Contains(id, "/") {
		return "", "", fmt.Errorf("provider ID %q is not aws:///<zone>/<instance-id>", providerID)
	}
	return zone, id, nil
}
