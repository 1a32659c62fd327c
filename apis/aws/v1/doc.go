// Package v1 holds the API types of the AWS provider, group karpenter.k8s.aws: the EC2NodeClass.
// Field names, defaults and validation follow Karpenter v1's EC2NodeClass so that existing
// manifests apply unchanged.
//
// +groupName=karpenter.k8s.aws
// +kubebuilder:object:generate=true
package v1
