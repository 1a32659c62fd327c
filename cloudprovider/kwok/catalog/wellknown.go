package catalog

import (
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/scheduling"
)

// The kwok provider's catalog imitates EC2, so its instance types and offerings carry EC2's
// label keys (karpenter.k8s.aws/instance-*, capacity-reservation-id, topology.k8s.aws/zone-id).
// It registers them as the kwok provider's well-known labels when the catalog is linked in,
// the same keys the AWS provider registers.
func init() {
	scheduling.RegisterWellKnownLabels(awsv1.WellKnownLabels...)
	cloudprovider.RegisterReservationIDLabel(awsv1.LabelCapacityReservationID)
	// Volumes the EBS CSI driver provisions select its zone key; on EC2's nodes (and kwok's,
	// which imitate them) it is the zone.
	scheduling.RegisterLabelAlias(awsv1.LabelEBSCSIZone, corev1.LabelTopologyZone)
}
