// Package v1alpha1 holds the karpenter.sh/v1alpha1 API: NodeOverlay, which changes the price or
// capacity that scheduling and consolidation assume for matching instance types.
//
// +groupName=karpenter.sh
// +kubebuilder:object:generate=true
package v1alpha1
