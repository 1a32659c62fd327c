// Package v1beta1 holds the CapacityBuffer API (group autoscaling.x-k8s.io) at v1beta1, the
// version Karpenter 1.14 and Cluster Autoscaler serve. Its schema has the same shape as
// v1alpha1 (the RFC's), so the one CRD serves both with conversion None: an object written in
// either version reads back in the other unchanged. v1alpha1 stays the storage version.
//
// +groupName=autoscaling.x-k8s.io
// +kubebuilder:object:generate=true
package v1beta1
