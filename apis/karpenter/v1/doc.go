// Package v1 holds the provider-neutral karpenter.sh/v1 API: NodePool and NodeClaim, with the
// schema and CEL validation the API server enforces before any controller sees an object.
//
// +groupName=karpenter.sh
// +kubebuilder:object:generate=true
package v1
