// Package v1alpha1 holds the karpenter.kwok.sh/v1alpha1 API: KWOKNodeClass, the NodeClass of the
// kwok cloud provider, whose "instances" are Nodes that kwok simulates. It has the same group,
// kind and schema as the NodeClass of Karpenter's kwok provider, so NodePools written for that
// provider work unchanged.
//
// +groupName=karpenter.kwok.sh
// +kubebuilder:object:generate=true
package v1alpha1
