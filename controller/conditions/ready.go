// Package conditions holds status-condition logic the controllers share.
package conditions

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Ready summarizes dependencies into a Ready condition's status, reason and message: True
// (reason readyReason) when all are True, else the first that is not, with its reason and
// message, or Unknown when one is not set yet.
func Ready(conds []metav1.Condition, dependencies []string, readyReason string) (status metav1.ConditionStatus, reason, message string) {
	for _, condType := range dependencies {
		cond := meta.FindStatusCondition(conds, condType)
		if cond == nil {
			return metav1.ConditionUnknown, "AwaitingReconciliation", condType + " is not set"
		}
		if cond.Status != metav1.ConditionTrue {
			message := fmt.Sprintf("%s=%s", cond.Type, cond.Status)
			if cond.Message != "" {
				message += ": " + cond.Message
			}
			return cond.Status, cond.Reason, message
		}
	}
	return metav1.ConditionTrue, readyReason, ""
}
