package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ConditionTypeReady is the condition that says a KWOKNodeClass may be used to launch nodes.
const ConditionTypeReady = "Ready"

// KWOKNodeClass is the NodeClass of the kwok provider. It has nothing to configure: the instance
// types come from the provider's catalog. Its status defaults to Ready, so that a NodePool
// referring to it is usable as soon as the object exists, without a controller to resolve it
// (the API server applies the default whenever it reads the object, because create requests may
// not set status).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=kwoknodeclasses,scope=Cluster,categories=karpenter,shortName={kwoknc,kwokncs}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type KWOKNodeClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:default={conditions: {{type: "Ready", status: "True", reason: "Ready", message: "", lastTransitionTime: "2024-01-01T01:01:01Z"}}}
	// +optional
	Status KWOKNodeClassStatus `json:"status,omitempty"`
}

// KWOKNodeClassStatus is the observed state of a KWOKNodeClass.
type KWOKNodeClassStatus struct {
	// Conditions report whether the class is ready for use.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// KWOKNodeClassList is a list of KWOKNodeClasses.
//
// +kubebuilder:object:root=true
type KWOKNodeClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KWOKNodeClass `json:"items"`
}

// GroupVersionKind is the kind of KWOKNodeClass, as NodePools' nodeClassRefs name it.
func GroupVersionKind() schema.GroupVersionKind {
	return SchemeGroupVersion.WithKind(KWOKNodeClassKind)
}

// GetConditions returns the class's status conditions; Ready says whether NodePools may launch
// with it (cloudprovider.NodeClass).
func (c *KWOKNodeClass) GetConditions() []metav1.Condition { return c.Status.Conditions }

// Ready reports whether the class's Ready condition is True, and otherwise why not.
func (c *KWOKNodeClass) Ready() (bool, string) {
	cond := findCondition(c.Status.Conditions, ConditionTypeReady)
	switch {
	case cond == nil:
		return false, "condition Ready is not set"
	case cond.Status != metav1.ConditionTrue:
		return false, "condition Ready is " + string(cond.Status) + reasonSuffix(cond)
	default:
		return true, ""
	}
}

func findCondition(conditions []metav1.Condition, conditionType string) *metav1.Condition {
	for i := range conditions {
		if conditions[i].Type == conditionType {
			return &conditions[i]
		}
	}
	return nil
}

func reasonSuffix(cond *metav1.Condition) string {
	switch {
	case cond.Reason != "" && cond.Message != "":
		return " (" + cond.Reason + ": " + cond.Message + ")"
	case cond.Reason != "":
		return " (" + cond.Reason + ")"
	default:
		return ""
	}
}
