package nodeclass

import (
	"slices"

	"github.com/joinery-dev/joinery/controller/conditions"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	"github.com/joinery-dev/joinery/cloudprovider/aws/nodeclass"
)

// part is one resolved part of a class and the condition reporting it.
type part struct {
	condition string
	// noun names the part in messages and events.
	noun string
	// notFound is the reason when nothing matched or a named resource does not exist.
	notFound string
}

var (
	partSubnets              = part{awsv1.ConditionTypeSubnetsReady, "subnets", "SubnetsNotFound"}
	partSecurityGroups       = part{awsv1.ConditionTypeSecurityGroupsReady, "security groups", "SecurityGroupsNotFound"}
	partAMIs                 = part{awsv1.ConditionTypeAMIsReady, "AMIs", "AMINotFound"}
	partCapacityReservations = part{awsv1.ConditionTypeCapacityReservationsReady, "capacity reservations", "CapacityReservationsNotFound"}
	partInstanceProfile      = part{awsv1.ConditionTypeInstanceProfileReady, "the instance profile", "InstanceProfileNotFound"}
	partPlacementGroup       = part{awsv1.ConditionTypePlacementGroupReady, "the placement group", "PlacementGroupNotFound"}
	// partValidation is the launch dry-runs' outcome; it is not resolved into the status.
	partValidation = part{awsv1.ConditionTypeValidationSucceeded, "the launch permissions", "ValidationFailed"}
)

// failedReason is the condition reason for a failure of the given class.
func (p part) failedReason(c nodeclass.Classification) string {
	switch c.Class {
	case nodeclass.ClassNoMatch, nodeclass.ClassNotFound:
		return p.notFound
	case nodeclass.ClassUnauthorized:
		return "Unauthorized"
	case nodeclass.ClassThrottled:
		return "Throttled"
	case nodeclass.ClassTransient:
		return "AWSError"
	}
	return "RequestFailed"
}

// readyDependencies must all be True for the class to be Ready, in the order a failing one is
// reported.
var readyDependencies = []string{
	awsv1.ConditionTypeValidationSucceeded,
	awsv1.ConditionTypeSubnetsReady,
	awsv1.ConditionTypeSecurityGroupsReady,
	awsv1.ConditionTypeAMIsReady,
	awsv1.ConditionTypeInstanceProfileReady,
	awsv1.ConditionTypeCapacityReservationsReady,
}

// setCondition writes a condition stamped with the class's generation; the transition time
// moves only when the status does.
func setCondition(nc *awsv1.EC2NodeClass, condType string, status metav1.ConditionStatus, reason, message string, now metav1.Time) {
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{
		Type: condType, Status: status, Reason: reason, Message: message,
		ObservedGeneration: nc.Generation, LastTransitionTime: now,
	})
}

// setReady summarizes the dependencies: True when all are, else the first that is not, with
// its reason and message.
func setReady(nc *awsv1.EC2NodeClass, now metav1.Time) {
	deps := readyDependencies
	if nc.Spec.PlacementGroupSelector != nil {
		deps = append(slices.Clip(deps), awsv1.ConditionTypePlacementGroupReady)
	}
	status, reason, message := conditions.Ready(nc.Status.Conditions, deps, awsv1.ConditionTypeReady)
	setCondition(nc, awsv1.ConditionTypeReady, status, reason, message, now)
}
