package v1

import "k8s.io/apimachinery/pkg/runtime/schema"

// NodeClassReference points to the cloud provider's NodeClass (for AWS, an EC2NodeClass) that
// holds the provider-specific part of a node's configuration.
type NodeClassReference struct {
	// Group of the NodeClass, e.g. karpenter.k8s.aws.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[^/]*$`
	// +required
	Group string `json:"group"`
	// Kind of the NodeClass, e.g. EC2NodeClass.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	Kind string `json:"kind"`
	// Name of the NodeClass.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`
}

// GroupKind returns the group and kind the reference points to.
func (r NodeClassReference) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: r.Group, Kind: r.Kind}
}
