package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodePool condition types. A NodePool's top-level condition is ConditionTypeReady, as a
// NodeClaim's: true when all the others are; a NodePool that is not ready is not provisioned for.
const (
	// ConditionTypeNodeClassReady says the referenced NodeClass exists and is ready.
	ConditionTypeNodeClassReady = "NodeClassReady"
	// ConditionTypeValidationSucceeded says the NodePool passed the checks the schema cannot make.
	ConditionTypeValidationSucceeded = "ValidationSucceeded"
)

// NodePoolStatus is the observed state of a NodePool.
type NodePoolStatus struct {
	// Resources is the total capacity of the NodePool's nodes.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// Nodes is the number of nodes the NodePool owns.
	// +optional
	Nodes *int64 `json:"nodes,omitempty"`
	// Conditions of the NodePool: NodeClassReady, ValidationSucceeded, Ready.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
