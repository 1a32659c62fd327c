package instancetype

import (
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/scheduling"
)

// The AWS provider's labels become well-known when the package that builds its instance types
// is linked in: a pod may then constrain karpenter.k8s.aws/instance-family or
// topology.k8s.aws/zone-id where a NodePool leaves them open, and reserved offerings carry
// karpenter.k8s.aws/capacity-reservation-id.
func init() {
	scheduling.RegisterWellKnownLabels(awsv1.WellKnownLabels...)
	cloudprovider.RegisterReservationIDLabel(awsv1.LabelCapacityReservationID)
	// Volumes the EBS CSI driver provisions select its zone key; on EC2's nodes (and kwok's,
	// which imitate them) it is the zone.
	scheduling.RegisterLabelAlias(awsv1.LabelEBSCSIZone, corev1.LabelTopologyZone)
}
