package v1

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Operators beyond corev1's: Gte and Lte compare a label's integer value inclusively.
const (
	NodeSelectorOpGte corev1.NodeSelectorOperator = "Gte"
	NodeSelectorOpLte corev1.NodeSelectorOperator = "Lte"
)

// MaxRequirements bounds requirements (plus, on a NodePool, template labels, which become
// requirements of the NodeClaims it creates).
const MaxRequirements = 100

// NodeSelectorRequirementWithMinValues is a node selector requirement (key, operator, values) that
// may also ask for a minimum number of distinct values of its key among the instance types a
// NodeClaim may launch as. Its JSON form is corev1.NodeSelectorRequirement's plus minValues.
//
// +kubebuilder:validation:XValidation:rule="self.operator != 'In' || (has(self.values) && size(self.values) > 0)",fieldPath=".values",message="operator In requires at least one value"
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['Exists', 'DoesNotExist']) || !has(self.values) || size(self.values) == 0",fieldPath=".values",message="operators Exists and DoesNotExist take no values"
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['Gt', 'Lt', 'Gte', 'Lte']) || (has(self.values) && size(self.values) == 1 && self.values[0].matches('^[0-9]{1,18}$'))",fieldPath=".values",message="operators Gt, Lt, Gte and Lte take exactly one value, a non-negative integer"
// +kubebuilder:validation:XValidation:rule="!has(self.minValues) || self.operator != 'In' || (has(self.values) && size(self.values) >= self.minValues)",fieldPath=".minValues",message="minValues must not exceed the number of values of an In requirement"
type NodeSelectorRequirementWithMinValues struct {
	// The fields are spelled out rather than embedding corev1.NodeSelectorRequirement so that
	// the schema can bound their lengths: the API server refuses CEL rules over strings of
	// unbounded length (its cost estimate assumes megabytes).

	// Key is the label key the requirement constrains. Keys owned by Kubernetes or joinery
	// are restricted, except their well-known labels.
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="!(self.startsWith('kubernetes.io/') || self.contains('.kubernetes.io/')) || self in ['kubernetes.io/arch', 'kubernetes.io/os', 'topology.kubernetes.io/zone', 'topology.kubernetes.io/region', 'beta.kubernetes.io/arch', 'beta.kubernetes.io/os', 'beta.kubernetes.io/instance-type', 'failure-domain.beta.kubernetes.io/zone', 'failure-domain.beta.kubernetes.io/region'] || self.startsWith('node.kubernetes.io/') || self.startsWith('node-restriction.kubernetes.io/')",message="label domain \"kubernetes.io\" is restricted"
	// +kubebuilder:validation:XValidation:rule="self != 'kubernetes.io/hostname'",message="label \"kubernetes.io/hostname\" is restricted"
	// +kubebuilder:validation:XValidation:rule="!(self.startsWith('k8s.io/') || self.contains('.k8s.io/'))",message="label domain \"k8s.io\" is restricted"
	// +kubebuilder:validation:XValidation:rule="!(self.startsWith('karpenter.sh/') || self.contains('.karpenter.sh/')) || self in ['karpenter.sh/capacity-type', 'karpenter.sh/nodepool']",message="label domain \"karpenter.sh\" is restricted"
	// +required
	Key string `json:"key"`
	// Operator relates the key to the values: In, NotIn, Exists, DoesNotExist, and the integer
	// comparisons Gt, Lt, Gte, Lte.
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
	// MinValues is the minimum number of distinct values of the key that the instance types a
	// NodeClaim may launch as must cover.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=50
	// +optional
	MinValues *int `json:"minValues,omitempty"`
}

// NodeSelectorRequirement returns the requirement without minValues, in corev1's form.
func (r NodeSelectorRequirementWithMinValues) NodeSelectorRequirement() corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: r.Key, Operator: r.Operator, Values: slices.Clone(r.Values)}
}
