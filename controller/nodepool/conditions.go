package nodepool

import (
	"github.com/joinery-dev/joinery/controller/conditions"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// readyDependencies are the conditions that must all be True for the NodePool to be Ready.
var readyDependencies = []string{karpv1.ConditionTypeNodeClassReady, karpv1.ConditionTypeValidationSucceeded}

// setCondition writes a condition stamped with the NodePool's generation. meta.SetStatusCondition
// keeps lastTransitionTime while the status is unchanged, so repeating it writes nothing new.
func setCondition(np *karpv1.NodePool, condType string, status metav1.ConditionStatus, reason, message string, now metav1.Time) {
	meta.SetStatusCondition(&np.Status.Conditions, metav1.Condition{
		Type:               condType,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: np.Generation,
		LastTransitionTime: now,
	})
}

// setNodeClassReady records the verdict on the NodePool's node class.
func setNodeClassReady(np *karpv1.NodePool, r nodeClassReadiness, now metav1.Time) {
	if r.ready {
		setCondition(np, karpv1.ConditionTypeNodeClassReady, metav1.ConditionTrue, karpv1.ConditionTypeNodeClassReady, "", now)
		return
	}
	setCondition(np, karpv1.ConditionTypeNodeClassReady, metav1.ConditionFalse, r.reason, r.message, now)
}

// setValidationSucceeded is always True: every rule a NodePool must follow is a CEL or schema
// rule the API server enforces on write, so an object that exists has passed them.
func setValidationSucceeded(np *karpv1.NodePool, now metav1.Time) {
	setCondition(np, karpv1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, karpv1.ConditionTypeValidationSucceeded, "", now)
}

// setReady summarizes the dependencies: True when all are, else the first one that is not,
// with its reason and message.
func setReady(np *karpv1.NodePool, now metav1.Time) {
	status, reason, message := conditions.Ready(np.Status.Conditions, readyDependencies, karpv1.ConditionTypeReady)
	setCondition(np, karpv1.ConditionTypeReady, status, reason, message, now)
}
