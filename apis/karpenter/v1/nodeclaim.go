package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeClaim is a request for one node: joinery launches an instance for it, links the node that
// registers, and tracks it until the node is gone. Its spec does not change after creation.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nodeclaims,scope=Cluster,categories=karpenter
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=".metadata.labels.node\\.kubernetes\\.io/instance-type"
// +kubebuilder:printcolumn:name="Capacity",type=string,JSONPath=".metadata.labels.karpenter\\.sh/capacity-type"
// +kubebuilder:printcolumn:name="Zone",type=string,JSONPath=".metadata.labels.topology\\.kubernetes\\.io/zone"
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=".status.nodeName"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="ImageID",type=string,JSONPath=".status.imageID",priority=1
// +kubebuilder:printcolumn:name="ID",type=string,JSONPath=".status.providerID",priority=1
// +kubebuilder:printcolumn:name="NodePool",type=string,JSONPath=".metadata.labels.karpenter\\.sh/nodepool",priority=1
// +kubebuilder:printcolumn:name="NodeClass",type=string,JSONPath=".spec.nodeClassRef.name",priority=1
// +kubebuilder:printcolumn:name="Drifted",type=string,JSONPath=".status.conditions[?(@.type==\"Drifted\")].status",priority=1
type NodeClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec NodeClaimSpec `json:"spec"`
	// +optional
	Status NodeClaimStatus `json:"status,omitempty"`
}

// NodeClaimList is a list of NodeClaims.
//
// +kubebuilder:object:root=true
type NodeClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeClaim `json:"items"`
}

// NodeClaimSpec describes the node to launch.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable"
type NodeClaimSpec struct {
	// Taints are put on the node; pods must tolerate them.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:XValidation:rule="self.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute']",fieldPath=".effect",message="effect must be one of NoSchedule, PreferNoSchedule, NoExecute"
	// +kubebuilder:validation:items:XValidation:rule="size(self.key) > 0 && size(self.key) <= 316",fieldPath=".key",message="taint key must be 1 to 316 characters"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.value) || size(self.value) <= 63",fieldPath=".value",message="taint value must be at most 63 characters"
	// +listType=atomic
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints are put on the node and expected to be removed by another system once the
	// node is ready; pods need not tolerate them.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:XValidation:rule="self.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute']",fieldPath=".effect",message="effect must be one of NoSchedule, PreferNoSchedule, NoExecute"
	// +kubebuilder:validation:items:XValidation:rule="size(self.key) > 0 && size(self.key) <= 316",fieldPath=".key",message="taint key must be 1 to 316 characters"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.value) || size(self.value) <= 63",fieldPath=".value",message="taint value must be at most 63 characters"
	// +listType=atomic
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// Requirements the node must satisfy: the NodePool's, narrowed by the pods it was created for.
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	// +required
	Requirements []NodeSelectorRequirementWithMinValues `json:"requirements"`
	// Resources the node must offer beyond its overhead.
	// +optional
	Resources ResourceRequirements `json:"resources,omitempty"`
	// NodeClassRef points to the cloud provider's NodeClass for the node.
	// +required
	NodeClassRef *NodeClassReference `json:"nodeClassRef"`
	// TerminationGracePeriod is how long the node may drain before its remaining pods are deleted
	// regardless of PodDisruptionBudgets and do-not-disrupt.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(s|m|h))+$`
	// +optional
	TerminationGracePeriod *metav1.Duration `json:"terminationGracePeriod,omitempty"`
	// ExpireAfter is how long the node may live before it is replaced. Never turns expiry off.
	// +kubebuilder:default="720h"
	// +optional
	ExpireAfter NillableDuration `json:"expireAfter,omitempty"`
}

// ResourceRequirements are the resources a NodeClaim asks of its node.
type ResourceRequirements struct {
	// Requests are the summed requests of the pods the NodeClaim was created for, plus daemons.
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`
}
