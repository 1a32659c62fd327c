package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConsolidationPolicy says which nodes consolidation may remove or replace.
// +kubebuilder:validation:Enum=WhenEmpty;WhenEmptyOrUnderutilized;Balanced
type ConsolidationPolicy string

const (
	// ConsolidationPolicyWhenEmpty consolidates only nodes without workload pods.
	ConsolidationPolicyWhenEmpty ConsolidationPolicy = "WhenEmpty"
	// ConsolidationPolicyWhenEmptyOrUnderutilized consolidates empty nodes and nodes whose pods
	// fit elsewhere or on a cheaper replacement.
	ConsolidationPolicyWhenEmptyOrUnderutilized ConsolidationPolicy = "WhenEmptyOrUnderutilized"
	// ConsolidationPolicyBalanced is WhenEmptyOrUnderutilized with one more approval condition
	// on each command, weighing the savings against the disruption.
	ConsolidationPolicyBalanced ConsolidationPolicy = "Balanced"
)

// DisruptionReason is a reason for graceful disruption that a budget may be limited to.
// +kubebuilder:validation:Enum=Empty;Underutilized;Drifted
type DisruptionReason string

// The graceful disruption reasons, typed for budgets.
const (
	DisruptionReasonTypeEmpty         DisruptionReason = DisruptionReasonEmpty
	DisruptionReasonTypeUnderutilized DisruptionReason = DisruptionReasonUnderutilized
	DisruptionReasonTypeDrifted       DisruptionReason = DisruptionReasonDrifted
)

// Disruption configures how and how fast nodes of a NodePool may be disrupted gracefully.
type Disruption struct {
	// ConsolidationPolicy says which nodes are candidates for consolidation.
	// +kubebuilder:default=WhenEmptyOrUnderutilized
	// +optional
	ConsolidationPolicy ConsolidationPolicy `json:"consolidationPolicy,omitempty"`
	// ConsolidateAfter is how long after a pod was added to or removed from a node the node
	// becomes consolidatable. Never turns consolidation off for the NodePool.
	// +kubebuilder:default="0s"
	// +required
	ConsolidateAfter NillableDuration `json:"consolidateAfter"`
	// Budgets limit how many of the NodePool's nodes may be disrupted at once. The most
	// restrictive active budget for a reason wins.
	// +kubebuilder:default={{nodes: "10%"}}
	// +kubebuilder:validation:MaxItems=50
	// +listType=atomic
	// +optional
	Budgets []Budget `json:"budgets,omitempty"`
}

// Budget caps the number of nodes being disrupted at once, always or in a recurring window.
//
// +kubebuilder:validation:XValidation:rule="has(self.schedule) == has(self.duration)",fieldPath=".schedule",message="schedule and duration must be set together"
type Budget struct {
	// Reasons the budget applies to; all reasons when empty.
	// +kubebuilder:validation:MaxItems=3
	// +listType=atomic
	// +optional
	Reasons []DisruptionReason `json:"reasons,omitempty"`
	// Nodes is a node count ("5") or a percentage of the NodePool's nodes ("10%", rounded up).
	// +kubebuilder:validation:Pattern=`^((100|[0-9]{1,2})%|[0-9]+)$`
	// +kubebuilder:validation:MaxLength=20
	// +kubebuilder:default="10%"
	// +optional
	Nodes string `json:"nodes"`
	// Schedule is a cron expression (five fields, UTC) or a macro (@yearly, @annually, @monthly,
	// @weekly, @daily, @midnight, @hourly) at which the budget's window starts.
	// +kubebuilder:validation:MaxLength=100
	// +kubebuilder:validation:Pattern=`^(@(annually|yearly|monthly|weekly|daily|midnight|hourly)|([*?]|[0-9]+(-[0-9]+)?|[A-Za-z]{3}(-[A-Za-z]{3})?)(/[0-9]+)?(,([*?]|[0-9]+(-[0-9]+)?|[A-Za-z]{3}(-[A-Za-z]{3})?)(/[0-9]+)?)*( +([*?]|[0-9]+(-[0-9]+)?|[A-Za-z]{3}(-[A-Za-z]{3})?)(/[0-9]+)?(,([*?]|[0-9]+(-[0-9]+)?|[A-Za-z]{3}(-[A-Za-z]{3})?)(/[0-9]+)?)*){4})$`
	// +optional
	Schedule *string `json:"schedule,omitempty"`
	// Duration is how long the window opened by Schedule lasts, in hours and minutes (e.g. 8h,
	// 30m, 10h5m).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+h([0-9]+m)?|[0-9]+m)(0s)?$`
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`
}
