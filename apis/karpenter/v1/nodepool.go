package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodePool describes the nodes joinery may launch for pending pods (through its template), how
// much capacity it may hold (limits), its priority among NodePools (weight) and how its nodes may
// be disrupted.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nodepools,scope=Cluster,categories=karpenter
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="NodeClass",type=string,JSONPath=".spec.template.spec.nodeClassRef.name"
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=".status.nodes"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Weight",type=integer,JSONPath=".spec.weight",priority=1
// +kubebuilder:printcolumn:name="CPU",type=string,JSONPath=".status.resources.cpu",priority=1
// +kubebuilder:printcolumn:name="Memory",type=string,JSONPath=".status.resources.memory",priority=1
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.nodes
type NodePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec NodePoolSpec `json:"spec"`
	// +optional
	Status NodePoolStatus `json:"status,omitempty"`
}

// NodePoolList is a list of NodePools.
//
// +kubebuilder:object:root=true
type NodePoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodePool `json:"items"`
}

// NodePoolSpec is the desired state of a NodePool.
//
// The rules on replicas are Karpenter's: a NodePool cannot switch between static and dynamic,
// and a static NodePool takes no weight and no limit but limits.nodes.
//
// +kubebuilder:validation:XValidation:rule="has(self.replicas) == has(oldSelf.replicas)",message="Cannot transition NodePool between static (replicas set) and dynamic (replicas unset) provisioning modes"
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || !has(self.limits) || size(self.limits) == 0 || (size(self.limits) == 1 && 'nodes' in self.limits)",message="only 'limits.nodes' is supported on static NodePools"
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || !has(self.weight)",message="'weight' is not supported on static NodePools"
type NodePoolSpec struct {
	// Template describes the NodeClaims the NodePool creates; pods' requirements narrow it
	// further for each NodeClaim.
	// +required
	Template NodeClaimTemplate `json:"template"`
	// Disruption configures graceful disruption of the NodePool's nodes.
	// +kubebuilder:default={consolidateAfter: "0s"}
	// +optional
	Disruption Disruption `json:"disruption"`
	// Limits cap the total resources of the NodePool's nodes; no node is launched past them.
	// +optional
	Limits corev1.ResourceList `json:"limits,omitempty"`
	// Weight orders NodePools: a higher weight is tried first. No weight sorts like weight 0.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	Weight *int32 `json:"weight,omitempty"`
	// Replicas makes the NodePool static: it keeps exactly this many NodeClaims whatever the
	// pending pods, when the StaticCapacity feature gate is on. Consolidation ignores its nodes;
	// drift and expiration replace them within the disruption budgets. Capped at 1000 (Karpenter
	// has no maximum) so that a count set by a user never becomes an unbounded allocation.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Replicas *int64 `json:"replicas,omitempty"`
}

// NodeClaimTemplate is the part of a NodePool copied onto each NodeClaim it creates.
//
// +kubebuilder:validation:XValidation:rule="size(self.spec.requirements) + (has(self.metadata) && has(self.metadata.labels) ? size(self.metadata.labels) : 0) <= 100",fieldPath=".spec.requirements",message="requirements and template labels together may not exceed 100"
type NodeClaimTemplate struct {
	// +optional
	ObjectMeta NodeClaimTemplateObjectMeta `json:"metadata,omitempty"`
	// +required
	Spec NodeClaimTemplateSpec `json:"spec"`
}

// NodeClaimTemplateObjectMeta holds the labels and annotations given to every node of a NodePool.
type NodeClaimTemplateObjectMeta struct {
	// Labels are applied to every node. Labels decided by the instance type or by joinery itself
	// are restricted.
	// +kubebuilder:validation:MaxProperties=100
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 316 && k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="label keys must be qualified names: an optional DNS subdomain prefix and '/', then at most 63 alphanumerics, '-', '_' or '.'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(self[k]) <= 63)",message="label values must be at most 63 characters"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k.startsWith('kubernetes.io/') || k.contains('.kubernetes.io/')) || k in ['kubernetes.io/arch', 'kubernetes.io/os', 'topology.kubernetes.io/zone', 'topology.kubernetes.io/region', 'beta.kubernetes.io/arch', 'beta.kubernetes.io/os', 'beta.kubernetes.io/instance-type', 'failure-domain.beta.kubernetes.io/zone', 'failure-domain.beta.kubernetes.io/region'] || k.startsWith('node.kubernetes.io/') || k.startsWith('node-restriction.kubernetes.io/'))",message="label domain \"kubernetes.io\" is restricted"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != 'kubernetes.io/hostname')",message="label \"kubernetes.io/hostname\" is restricted"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k.startsWith('k8s.io/') || k.contains('.k8s.io/')))",message="label domain \"k8s.io\" is restricted"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k.startsWith('karpenter.sh/') || k.contains('.karpenter.sh/')) || k == 'karpenter.sh/capacity-type')",message="label domain \"karpenter.sh\" is restricted"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k.startsWith('karpenter.k8s.aws/') || k.contains('.karpenter.k8s.aws/')))",message="label domain \"karpenter.k8s.aws\" is restricted"
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations are applied to every node.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// NodeClaimTemplateSpec is the spec of the NodeClaims a NodePool creates, less the resource
// requests that each NodeClaim gets from the pods it was created for.
type NodeClaimTemplateSpec struct {
	// Taints are put on every node; pods must tolerate them to be provisioned for.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:XValidation:rule="self.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute']",fieldPath=".effect",message="effect must be one of NoSchedule, PreferNoSchedule, NoExecute"
	// +kubebuilder:validation:items:XValidation:rule="size(self.key) > 0 && size(self.key) <= 316",fieldPath=".key",message="taint key must be 1 to 316 characters"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.value) || size(self.value) <= 63",fieldPath=".value",message="taint value must be at most 63 characters"
	// +listType=atomic
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints are put on every node and expected to be removed by another system once
	// the node is ready; pods need not tolerate them.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:XValidation:rule="self.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute']",fieldPath=".effect",message="effect must be one of NoSchedule, PreferNoSchedule, NoExecute"
	// +kubebuilder:validation:items:XValidation:rule="size(self.key) > 0 && size(self.key) <= 316",fieldPath=".key",message="taint key must be 1 to 316 characters"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.value) || size(self.value) <= 63",fieldPath=".value",message="taint value must be at most 63 characters"
	// +listType=atomic
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// Requirements constrain the nodes the NodePool may launch. Pods' own requirements narrow
	// them further.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:XValidation:rule="self.key != 'karpenter.sh/nodepool'",fieldPath=".key",message="label \"karpenter.sh/nodepool\" is restricted"
	// +listType=atomic
	// +required
	Requirements []NodeSelectorRequirementWithMinValues `json:"requirements"`
	// NodeClassRef points to the cloud provider's NodeClass for the nodes.
	// +required
	NodeClassRef *NodeClassReference `json:"nodeClassRef"`
	// TerminationGracePeriod is how long a node may drain before its remaining pods are deleted
	// regardless of PodDisruptionBudgets and do-not-disrupt.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(s|m|h))+$`
	// +optional
	TerminationGracePeriod *metav1.Duration `json:"terminationGracePeriod,omitempty"`
	// ExpireAfter is how long a node may live before it is replaced. Never turns expiry off.
	// +kubebuilder:default="720h"
	// +optional
	ExpireAfter NillableDuration `json:"expireAfter,omitempty"`
}
