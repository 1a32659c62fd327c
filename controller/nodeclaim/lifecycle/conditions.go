package lifecycle

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// lifecycleConditions are the conditions this controller owns, in the order a NodeClaim passes
// them; Ready summarizes the others.
var lifecycleConditions = []string{
	karpv1.ConditionTypeLaunched,
	karpv1.ConditionTypeRegistered,
	karpv1.ConditionTypeInitialized,
	karpv1.ConditionTypeReady,
}

// readyDependencies are the conditions that must all be True for Ready to be.
var readyDependencies = lifecycleConditions[:3]

// Reasons of conditions that are not True yet.
const (
	reasonAwaiting              = "AwaitingReconciliation"
	reasonNodeNotFound          = "NodeNotFound"
	reasonMultipleNodes         = "MultipleNodesFound"
	reasonNotLaunched           = "NotLaunched"
	reasonNotRegistered         = "NotRegistered"
	reasonNodeNotReady          = "NodeNotReady"
	reasonStartupTaints         = "StartupTaintsExist"
	reasonEphemeralTaints       = "KnownEphemeralTaintsExist"
	reasonResourceMissing       = "ResourceNotRegistered"
	reasonLaunchFailed          = "LaunchFailed"
	reasonNodeClassNotReady     = "NodeClassNotReady"
	reasonInsufficientCap       = "InsufficientCapacityError"
	reasonRegistrationTimeout   = "RegistrationTimeout"
	reasonInitializationTimeout = "InitializationTimeout"
	// reasonPlannedRequestsInvalid is an event's: the planned-requests annotation is corrupt.
	reasonPlannedRequestsInvalid = "PlannedRequestsInvalid"
)

// conditionSetter writes conditions with the controller's clock and the object's generation.
type conditionSetter struct {
	nodeClaim *karpv1.NodeClaim
	now       metav1.Time
}

// set writes a condition. meta.SetStatusCondition keeps lastTransitionTime while the status does
// not change, so repeating a set is harmless.
func (s conditionSetter) set(condType string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&s.nodeClaim.Status.Conditions, metav1.Condition{
		Type:               condType,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: s.nodeClaim.Generation,
		LastTransitionTime: s.now,
	})
}

// initialize adds every lifecycle condition the NodeClaim lacks as Unknown, so that each later
// transition reads "Unknown -> True" as in Karpenter's events.
func (s conditionSetter) initialize() {
	for _, condType := range lifecycleConditions {
		if meta.FindStatusCondition(s.nodeClaim.Status.Conditions, condType) == nil {
			s.set(condType, metav1.ConditionUnknown, reasonAwaiting, "object is awaiting reconciliation")
		}
	}
}

// summarizeReady sets Ready from the conditions it depends on: True when all are, otherwise the
// status, reason and message of the first False one, or else of the first Unknown one.
func (s conditionSetter) summarizeReady() {
	var blocking *metav1.Condition
	for _, condType := range readyDependencies {
		cond := meta.FindStatusCondition(s.nodeClaim.Status.Conditions, condType)
		if cond == nil {
			cond = &metav1.Condition{Type: condType, Status: metav1.ConditionUnknown, Reason: reasonAwaiting}
		}
		if cond.Status == metav1.ConditionFalse {
			blocking = cond
			break
		}
		if cond.Status == metav1.ConditionUnknown && blocking == nil {
			blocking = cond
		}
	}
	if blocking == nil {
		s.set(karpv1.ConditionTypeReady, metav1.ConditionTrue, karpv1.ConditionTypeReady, "")
		return
	}
	message := fmt.Sprintf("%s=%s", blocking.Type, blocking.Status)
	if blocking.Message != "" {
		message += ": " + blocking.Message
	}
	s.set(karpv1.ConditionTypeReady, blocking.Status, blocking.Reason, message)
}

func isTrue(nc *karpv1.NodeClaim, condType string) bool {
	return meta.IsStatusConditionTrue(nc.Status.Conditions, condType)
}

// transition is a change of a condition's status, reported as an event.
type transition struct {
	condType, from, to, reason string
}

// transitions lists the lifecycle conditions whose status differs between before and after. A
// condition that did not exist before counts as Unknown, so initializing one is no transition.
func transitions(before, after []metav1.Condition) []transition {
	var out []transition
	for _, condType := range lifecycleConditions {
		cond := meta.FindStatusCondition(after, condType)
		if cond == nil {
			continue
		}
		from := metav1.ConditionUnknown
		if old := meta.FindStatusCondition(before, condType); old != nil {
			from = old.Status
		}
		if from != cond.Status {
			out = append(out, transition{condType: condType, from: string(from), to: string(cond.Status), reason: cond.Reason})
		}
	}
	return out
}
