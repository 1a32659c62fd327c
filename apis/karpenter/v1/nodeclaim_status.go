package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeClaim condition types.
const (
	// ConditionTypeLaunched: the cloud provider created the instance.
	ConditionTypeLaunched = "Launched"
	// ConditionTypeRegistered: a node for the instance joined the cluster and was linked.
	ConditionTypeRegistered = "Registered"
	// ConditionTypeInitialized: the node is ready, its startup taints are gone and its
	// requested resources are registered.
	ConditionTypeInitialized = "Initialized"
	// ConditionTypeReady: the top-level condition, true when the others are. A NodePool's Ready
	// condition has the same type.
	ConditionTypeReady = "Ready"
	// ConditionTypeDrifted: the NodeClaim no longer matches its NodePool or NodeClass.
	ConditionTypeDrifted = "Drifted"
	// ConditionTypeConsolidatable: consolidateAfter has passed since the last pod event.
	ConditionTypeConsolidatable = "Consolidatable"
	// ConditionTypeEmpty: the node runs no workload pods.
	ConditionTypeEmpty = "Empty"
	// ConditionTypeDisrupted: the disruption controller chose the node for a command; the
	// reason is the disruption reason (Drifted, Empty, ...).
	ConditionTypeDisrupted = "Disrupted"
	// ConditionTypeDisruptionReason: the node is being disrupted; the reason says why.
	ConditionTypeDisruptionReason = "DisruptionReason"
	// ConditionTypeConsistentStateFound: the node matches what the NodeClaim promised.
	ConditionTypeConsistentStateFound = "ConsistentStateFound"
	// ConditionTypeDrained: the terminating node's pods are evicted (Unknown while draining).
	ConditionTypeDrained = "Drained"
	// ConditionTypeVolumesDetached: the terminating node's volumes are detached (Unknown while
	// waiting for their VolumeAttachments).
	ConditionTypeVolumesDetached = "VolumesDetached"
	// ConditionTypeInstanceTerminating: the cloud provider was asked to terminate the instance.
	ConditionTypeInstanceTerminating = "InstanceTerminating"
)

// NodeClaimStatus is the observed state of a NodeClaim.
type NodeClaimStatus struct {
	// NodeName is the name of the node linked to the NodeClaim.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// ProviderID is the cloud provider's identifier of the instance.
	// +optional
	ProviderID string `json:"providerID,omitempty"`
	// ImageID is the identifier of the image the instance runs.
	// +optional
	ImageID string `json:"imageID,omitempty"`
	// Capacity is the instance's total resources.
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Allocatable is the instance's resources available to pods.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	// Conditions of the NodeClaim's lifecycle and disruption state.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// LastPodEventTime is when a pod was last scheduled to or removed from the node; it starts
	// the consolidateAfter countdown.
	// +optional
	LastPodEventTime metav1.Time `json:"lastPodEventTime,omitempty"`
}
