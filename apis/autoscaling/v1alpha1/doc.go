// Package v1alpha1 holds the SIG Autoscaling CapacityBuffer API (group autoscaling.x-k8s.io),
// with the same shape as the upstream types in k8s.io/autoscaler's
// cluster-autoscaler/apis/capacitybuffer, kept here to avoid depending on that module.
//
// +groupName=autoscaling.x-k8s.io
// +kubebuilder:object:generate=true
package v1alpha1
