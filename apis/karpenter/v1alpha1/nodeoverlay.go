package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeOverlay changes what scheduling and consolidation assume about the instance types its
// requirements match: their price (replaced or adjusted) and extra capacity. Overlays that
// match the same offering are merged by weight.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nodeoverlays,scope=Cluster,categories=karpenter
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Weight",type=integer,JSONPath=".spec.weight"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type NodeOverlay struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec NodeOverlaySpec `json:"spec"`
	// +optional
	Status NodeOverlayStatus `json:"status,omitempty"`
}

// NodeOverlayList is a list of NodeOverlays.
//
// +kubebuilder:object:root=true
type NodeOverlayList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeOverlay `json:"items"`
}

// NodeOverlaySpec says which offerings the overlay applies to and what it changes.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.price) && has(self.priceAdjustment))",fieldPath=".priceAdjustment",message="price and priceAdjustment are mutually exclusive"
// +kubebuilder:validation:XValidation:rule="!has(self.capacity) || self.capacity.size() <= 100",fieldPath=".capacity",message="capacity may name at most 100 resources"
type NodeOverlaySpec struct {
	// Requirements select the instance types (and NodePools, by karpenter.sh/nodepool) the
	// overlay applies to. Empty matches every instance type.
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	// +required
	Requirements []NodeSelectorRequirement `json:"requirements"`
	// Weight decides between overlays that match the same offering: the higher weight wins;
	// ties are broken by name.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +optional
	Weight *int32 `json:"weight,omitempty"`
	// Price replaces the offering's price (a non-negative decimal, per hour).
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +optional
	Price *string `json:"price,omitempty"`
	// PriceAdjustment changes the offering's price by a signed amount ("-0.5", "+1.2") or a
	// signed percentage ("-10%", "+5%"); a price cannot drop by more than 100%.
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([+-][0-9]+(\.[0-9]+)?|\+[0-9]+(\.[0-9]+)?%|-(100|[0-9]{1,2}(\.[0-9]+)?)%)$`
	// +optional
	PriceAdjustment *string `json:"priceAdjustment,omitempty"`
	// Capacity adds resources (extended resources such as hugepages or devices) to the
	// matching instance types, or overrides their amount; for cpu, memory and
	// ephemeral-storage the value is the node's overhead (what it reserves for the system).
	// At most 100 resources: each is added to every matching instance type.
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
}

// NodeSelectorRequirement is a requirement on a label of instance types: key, operator and
// values, with Karpenter's Gte and Lte operators besides corev1's.
//
// +kubebuilder:validation:XValidation:rule="self.operator != 'In' || (has(self.values) && size(self.values) > 0)",fieldPath=".values",message="operator In requires at least one value"
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['Exists', 'DoesNotExist']) || !has(self.values) || size(self.values) == 0",fieldPath=".values",message="operators Exists and DoesNotExist take no values"
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['Gt', 'Lt', 'Gte', 'Lte']) || (has(self.values) && size(self.values) == 1 && self.values[0].matches('^[0-9]{1,18}$'))",fieldPath=".values",message="operators Gt, Lt, Gte and Lte take exactly one value, a non-negative integer"
type NodeSelectorRequirement struct {
	// Key is the label key the requirement constrains.
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`
	// +required
	Key string `json:"key"`
	// Operator relates the key to the values.
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist;Gt;Lt;Gte;Lte
	// +required
	Operator corev1.NodeSelectorOperator `json:"operator"`
	// Values are label values: several for In and NotIn, none for Exists and DoesNotExist, one
	// non-negative integer for Gt, Lt, Gte and Lte.
	// At most 1000: every value is held, and matched against, in each plan.
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
}

// NodeOverlayStatus is the observed state of a NodeOverlay.
type NodeOverlayStatus struct {
	// Conditions of the overlay. Ready is false, with reason Conflict, when an overlay of the
	// same weight and an earlier name changes the same field of an offering differently.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ConditionTypeReady says the overlay is applied.
const ConditionTypeReady = "Ready"

// Ready's reasons. The docs spell Conflict in lower case; joinery uses the CamelCase every
// condition reason has.
const (
	// ConditionReasonApplied: the overlay applies wherever its requirements match.
	ConditionReasonApplied = "Applied"
	// ConditionReasonConflict: an overlay of the same weight and an earlier name changes a field
	// of an offering this one matches to a different value, and wins it.
	ConditionReasonConflict = "Conflict"
	// ConditionReasonInvalid: the spec cannot be applied (input the schema does not catch).
	ConditionReasonInvalid = "Invalid"
)
