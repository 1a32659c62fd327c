package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Eviction signals the kubelet understands and EC2NodeClass accepts as eviction keys.
const (
	EvictionSignalMemoryAvailable   = "memory.available"
	EvictionSignalNodeFSAvailable   = "nodefs.available"
	EvictionSignalNodeFSInodesFree  = "nodefs.inodesFree"
	EvictionSignalImageFSAvailable  = "imagefs.available"
	EvictionSignalImageFSInodesFree = "imagefs.inodesFree"
	EvictionSignalPIDAvailable      = "pid.available"
)

// KubeletConfiguration is the subset of the kubelet's configuration that EC2NodeClass sets.
// The values feed both the generated user data and scheduling (pod density, allocatable).
//
// Eviction and reserved-resource maps are bounded (maxProperties) to keep the cost of their
// validation rules within the API server's budget.
//
// +kubebuilder:validation:XValidation:rule="!has(self.imageGCHighThresholdPercent) || !has(self.imageGCLowThresholdPercent) || self.imageGCHighThresholdPercent > self.imageGCLowThresholdPercent",message="imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent",fieldPath=".imageGCHighThresholdPercent"
// +kubebuilder:validation:XValidation:rule="!has(self.evictionSoft) || self.evictionSoft.all(k, has(self.evictionSoftGracePeriod) && k in self.evictionSoftGracePeriod)",message="every evictionSoft signal needs a matching evictionSoftGracePeriod",fieldPath=".evictionSoft"
// +kubebuilder:validation:XValidation:rule="!has(self.evictionSoftGracePeriod) || self.evictionSoftGracePeriod.all(k, has(self.evictionSoft) && k in self.evictionSoft)",message="every evictionSoftGracePeriod signal needs a matching evictionSoft threshold",fieldPath=".evictionSoftGracePeriod"
type KubeletConfiguration struct {
	// ClusterDNS is the list of DNS server IPs the kubelet hands to pods.
	// +kubebuilder:validation:MaxItems=3
	// +optional
	ClusterDNS []string `json:"clusterDNS,omitempty"`

	// MaxPods caps the number of pods on a node.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxPods *int32 `json:"maxPods,omitempty"`

	// PodsPerCore caps pods per vCPU; the lower of this and MaxPods applies.
	// +kubebuilder:validation:Minimum=0
	// +optional
	PodsPerCore *int32 `json:"podsPerCore,omitempty"`

	// SystemReserved reserves resources for OS daemons.
	// +kubebuilder:validation:MaxProperties=4
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['cpu', 'memory', 'ephemeral-storage', 'pid'])",message="valid keys for systemReserved are ['cpu', 'memory', 'ephemeral-storage', 'pid']"
	// +kubebuilder:validation:XValidation:rule="self.all(k, isQuantity(self[k]) && !self[k].startsWith('-'))",message="systemReserved values must be non-negative quantities"
	// +optional
	SystemReserved map[string]string `json:"systemReserved,omitempty"`

	// KubeReserved reserves resources for Kubernetes daemons (kubelet, container runtime).
	// +kubebuilder:validation:MaxProperties=4
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['cpu', 'memory', 'ephemeral-storage', 'pid'])",message="valid keys for kubeReserved are ['cpu', 'memory', 'ephemeral-storage', 'pid']"
	// +kubebuilder:validation:XValidation:rule="self.all(k, isQuantity(self[k]) && !self[k].startsWith('-'))",message="kubeReserved values must be non-negative quantities"
	// +optional
	KubeReserved map[string]string `json:"kubeReserved,omitempty"`

	// EvictionHard maps eviction signals to thresholds (a percentage such as "10%" or a
	// quantity such as "500Mi") at which pods are evicted immediately.
	// +kubebuilder:validation:MaxProperties=6
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['memory.available', 'nodefs.available', 'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree', 'pid.available'])",message="valid keys for evictionHard are ['memory.available', 'nodefs.available', 'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree', 'pid.available']"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !self[k].startsWith('-') && (self[k].endsWith('%') ? isQuantity(self[k].substring(0, size(self[k]) - 1)) && quantity(self[k].substring(0, size(self[k]) - 1)).compareTo(quantity('100')) <= 0 : isQuantity(self[k])))",message="evictionHard values must be a percentage between 0% and 100% or a non-negative quantity"
	// +optional
	EvictionHard map[string]string `json:"evictionHard,omitempty"`

	// EvictionSoft maps eviction signals to thresholds that evict pods once exceeded for the
	// signal's grace period in EvictionSoftGracePeriod.
	// +kubebuilder:validation:MaxProperties=6
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['memory.available', 'nodefs.available', 'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree', 'pid.available'])",message="valid keys for evictionSoft are ['memory.available', 'nodefs.available', 'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree', 'pid.available']"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !self[k].startsWith('-') && (self[k].endsWith('%') ? isQuantity(self[k].substring(0, size(self[k]) - 1)) && quantity(self[k].substring(0, size(self[k]) - 1)).compareTo(quantity('100')) <= 0 : isQuantity(self[k])))",message="evictionSoft values must be a percentage between 0% and 100% or a non-negative quantity"
	// +optional
	EvictionSoft map[string]string `json:"evictionSoft,omitempty"`

	// EvictionSoftGracePeriod maps eviction signals to how long a soft threshold must be
	// exceeded before pods are evicted.
	// The values are Go durations; the regular expression is deliberately short to stay within
	// the CEL cost budget, and a duration() parse rejects the few strings it lets through.
	// +kubebuilder:validation:MaxProperties=6
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['memory.available', 'nodefs.available', 'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree', 'pid.available'])",message="valid keys for evictionSoftGracePeriod are ['memory.available', 'nodefs.available', 'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree', 'pid.available']"
	// +kubebuilder:validation:XValidation:rule="self.all(k, self[k].matches('^([.0-9]+[hmnsu]+)+$'))",message="evictionSoftGracePeriod values must be durations such as 1m30s"
	// +kubebuilder:validation:XValidation:rule="self.all(k, duration(self[k]) >= duration('0s'))",message="evictionSoftGracePeriod values must be non-negative durations"
	// +optional
	EvictionSoftGracePeriod map[string]metav1.Duration `json:"evictionSoftGracePeriod,omitempty"`

	// EvictionMaxPodGracePeriod caps, in seconds, the termination grace period of pods
	// evicted by a soft threshold.
	// +optional
	EvictionMaxPodGracePeriod *int32 `json:"evictionMaxPodGracePeriod,omitempty"`

	// ImageGCHighThresholdPercent is the disk usage at which image garbage collection starts.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	ImageGCHighThresholdPercent *int32 `json:"imageGCHighThresholdPercent,omitempty"`

	// ImageGCLowThresholdPercent is the disk usage image garbage collection frees down to.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	ImageGCLowThresholdPercent *int32 `json:"imageGCLowThresholdPercent,omitempty"`

	// CPUCFSQuota enforces CPU limits through CFS quota.
	// +optional
	CPUCFSQuota *bool `json:"cpuCFSQuota,omitempty"`
}
