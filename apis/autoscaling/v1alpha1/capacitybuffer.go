package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProvisioningStrategyActiveCapacity keeps the buffer's capacity provisioned continuously,
// following changes of the referenced workload; it is the default strategy.
const ProvisioningStrategyActiveCapacity = "buffer.x-k8s.io/active-capacity"

// Condition types of a CapacityBuffer.
const (
	// ConditionTypeReadyForProvisioning is True once the pod template is resolved and the
	// replica count calculated.
	ConditionTypeReadyForProvisioning = "ReadyForProvisioning"
	// ConditionTypeProvisioning is True when the buffer's virtual pods fit on existing nodes
	// without new NodeClaims.
	ConditionTypeProvisioning = "Provisioning"
)

// Condition reasons of a CapacityBuffer.
const (
	ReasonScalableRefNotFound  = "ScalableRefNotFound"
	ReasonPodTemplateNotFound  = "PodTemplateNotFound"
	ReasonInsufficientCapacity = "InsufficientCapacity"
)

// CapacityBuffer asks for spare capacity shaped like the pods of a workload or PodTemplate, so
// that new pods schedule without waiting for a node.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=capacitybuffers,scope=Namespaced,shortName=cb,categories=autoscaling
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Strategy",type="string",JSONPath=".spec.provisioningStrategy"
// +kubebuilder:printcolumn:name="PodTemplate",type="string",JSONPath=".status.podTemplateRef.name"
// +kubebuilder:printcolumn:name="Replicas",type="integer",JSONPath=".status.replicas"
// +kubebuilder:printcolumn:name="ReadyForProvisioning",type="string",JSONPath=`.status.conditions[?(@.type=="ReadyForProvisioning")].status`
// +kubebuilder:printcolumn:name="Provisioning",type="string",JSONPath=`.status.conditions[?(@.type=="Provisioning")].status`
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type CapacityBuffer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec defines the desired characteristics of the buffer.
	// +required
	Spec CapacityBufferSpec `json:"spec"`

	// Status represents the current state of the buffer and its readiness for provisioning.
	// +optional
	Status CapacityBufferStatus `json:"status,omitempty"`
}

// CapacityBufferList is a list of CapacityBuffers.
//
// +kubebuilder:object:root=true
type CapacityBufferList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CapacityBuffer `json:"items"`
}

// CapacityBufferSpec defines the desired state of a CapacityBuffer.
//
// A buffer built from a PodTemplate has no workload to take a percentage of, so it must be
// sized by replicas or limits; otherwise it would have no bound at all.
//
// +kubebuilder:validation:XValidation:rule="has(self.podTemplateRef) != has(self.scalableRef)",message="exactly one of podTemplateRef or scalableRef must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.percentage) || has(self.scalableRef)",message="percentage is only applicable when scalableRef is set",fieldPath=".percentage"
// +kubebuilder:validation:XValidation:rule="!has(self.podTemplateRef) || has(self.replicas) || has(self.limits)",message="if podTemplateRef is set, replicas or limits must also be set",fieldPath=".podTemplateRef"
type CapacityBufferSpec struct {
	// ProvisioningStrategy defines how the buffer is used. "buffer.x-k8s.io/active-capacity",
	// the default, keeps the capacity provisioned until the buffer is deleted.
	// +kubebuilder:default="buffer.x-k8s.io/active-capacity"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ProvisioningStrategy *string `json:"provisioningStrategy,omitempty"`

	// PodTemplateRef references a PodTemplate in the buffer's namespace that gives the shape
	// of one buffer chunk. Exactly one of podTemplateRef and scalableRef must be set.
	// +optional
	PodTemplateRef *LocalObjectRef `json:"podTemplateRef,omitempty"`

	// ScalableRef references a workload with a scale subresource (a Deployment, StatefulSet or
	// ReplicaSet) in the buffer's namespace whose pod template gives the shape of one chunk.
	// Exactly one of podTemplateRef and scalableRef must be set.
	// +optional
	ScalableRef *ScalableRef `json:"scalableRef,omitempty"`

	// Replicas is the desired number of buffer chunks. If neither replicas nor percentage is
	// set, as many chunks as fit within limits are created; if both are set, the smaller
	// count wins. At most 1000: joinery builds every chunk as a virtual pod in each pass, and
	// at most 1000 across all buffers (docs/capacitybuffer.md).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Percentage is the desired number of chunks as a percentage of the scalableRef's current
	// replicas; only applicable with scalableRef.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Percentage *int32 `json:"percentage,omitempty"`

	// Limits caps the total resource requests of all chunks of the buffer.
	// +optional
	Limits corev1.ResourceList `json:"limits,omitempty"`
}

// LocalObjectRef names an object in the buffer's namespace.
type LocalObjectRef struct {
	// Name of the object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`
}

// ScalableRef names an object with a scale subresource in the buffer's namespace.
type ScalableRef struct {
	// APIGroup of the object; empty for the core group.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	APIGroup string `json:"apiGroup,omitempty"`

	// Kind of the object, e.g. Deployment.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	Kind string `json:"kind"`

	// Name of the object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`
}

// CapacityBufferStatus is the observed state of a CapacityBuffer.
type CapacityBufferStatus struct {
	// Conditions report the buffer's state: ReadyForProvisioning and Provisioning.
	// +listType=map
	// +listMapKey=type
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// PodTemplateRef is the PodTemplate the buffer's chunks were resolved from.
	// +optional
	PodTemplateRef *LocalObjectRef `json:"podTemplateRef,omitempty"`

	// Replicas is the number of buffer chunks currently calculated.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// PodTemplateGeneration is the observed generation of the PodTemplate.
	// +optional
	PodTemplateGeneration *int64 `json:"podTemplateGeneration,omitempty"`

	// ProvisioningStrategy is the strategy the buffer is being provisioned with.
	// +optional
	ProvisioningStrategy *string `json:"provisioningStrategy,omitempty"`
}
