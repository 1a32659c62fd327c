package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of an EC2NodeClass. Ready is the conjunction of the others; NodePools
// whose class is not Ready are not used for scheduling.
const (
	ConditionTypeSubnetsReady              = "SubnetsReady"
	ConditionTypeSecurityGroupsReady       = "SecurityGroupsReady"
	ConditionTypeAMIsReady                 = "AMIsReady"
	ConditionTypeInstanceProfileReady      = "InstanceProfileReady"
	ConditionTypeCapacityReservationsReady = "CapacityReservationsReady"
	ConditionTypeValidationSucceeded       = "ValidationSucceeded"
	ConditionTypeReady                     = "Ready"
)

// EC2NodeClassStatus is what the EC2NodeClass controller resolved from the spec.
type EC2NodeClassStatus struct {
	// Subnets resolved from subnetSelectorTerms, most free IP addresses first.
	// +optional
	Subnets []Subnet `json:"subnets,omitempty"`

	// SecurityGroups resolved from securityGroupSelectorTerms.
	// +optional
	SecurityGroups []SecurityGroup `json:"securityGroups,omitempty"`

	// AMIs resolved from amiSelectorTerms, each with the requirements an instance type must
	// meet to boot it.
	// +optional
	AMIs []AMI `json:"amis,omitempty"`

	// CapacityReservations resolved from capacityReservationSelectorTerms.
	// +optional
	CapacityReservations []CapacityReservation `json:"capacityReservations,omitempty"`

	// PlacementGroups holds the placement group spec.placementGroupSelector resolved to: one
	// group, or none without a selector.
	// +kubebuilder:validation:MaxItems=1
	// +optional
	PlacementGroups []PlacementGroup `json:"placementGroups,omitempty"`

	// InstanceProfile is the instance profile in use: generated from spec.role, or
	// spec.instanceProfile.
	// +optional
	InstanceProfile string `json:"instanceProfile,omitempty"`

	// Conditions report readiness of each resolved part and of the whole class.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Subnet is a resolved subnet.
type Subnet struct {
	// ID of the subnet.
	// +required
	ID string `json:"id"`
	// Zone is the subnet's availability zone name.
	// +required
	Zone string `json:"zone"`
	// ZoneID is the subnet's availability zone id.
	// +optional
	ZoneID string `json:"zoneID,omitempty"`
}

// SecurityGroup is a resolved security group.
type SecurityGroup struct {
	// ID of the security group.
	// +required
	ID string `json:"id"`
	// Name of the security group.
	// +optional
	Name string `json:"name,omitempty"`
}

// AMI is a resolved AMI with the node requirements it serves.
type AMI struct {
	// ID of the AMI.
	// +required
	ID string `json:"id"`
	// Name of the AMI.
	// +optional
	Name string `json:"name,omitempty"`
	// Requirements an instance type must satisfy to use this AMI (architecture, GPUs, ...).
	// +required
	Requirements []corev1.NodeSelectorRequirement `json:"requirements"`
	// Deprecated is true when EC2 reports the AMI as deprecated.
	// +optional
	Deprecated bool `json:"deprecated,omitempty"`
}

// CapacityReservation is a resolved on-demand capacity reservation.
type CapacityReservation struct {
	// ID of the capacity reservation.
	// +required
	ID string `json:"id"`
	// InstanceType the reservation holds capacity for.
	// +required
	InstanceType string `json:"instanceType"`
	// AvailabilityZone the reservation is in.
	// +required
	AvailabilityZone string `json:"availabilityZone"`
	// OwnerID is the account that owns the reservation.
	// +required
	OwnerID string `json:"ownerID"`
	// ReservationType is default (an on-demand capacity reservation) or capacity-block.
	// +kubebuilder:validation:Enum:={default,capacity-block}
	// +kubebuilder:default=default
	// +optional
	ReservationType CapacityReservationType `json:"reservationType,omitempty"`
	// State is active, or expiring when the reservation ends soon.
	// +kubebuilder:validation:Enum:={active,expiring}
	// +kubebuilder:default=active
	// +optional
	State CapacityReservationState `json:"state,omitempty"`
	// EndTime is when the reservation expires, if it does.
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`
	// InstanceMatchCriteria is open (any matching launch uses it) or targeted (only launches
	// that name the reservation do).
	// +kubebuilder:validation:Enum:={open,targeted}
	// +required
	InstanceMatchCriteria string `json:"instanceMatchCriteria"`
}

// CapacityReservationType distinguishes on-demand capacity reservations from capacity blocks.
type CapacityReservationType string

// Capacity reservation types.
const (
	CapacityReservationTypeDefault       CapacityReservationType = "default"
	CapacityReservationTypeCapacityBlock CapacityReservationType = "capacity-block"
)

// CapacityReservationState is the lifecycle state of a resolved capacity reservation.
type CapacityReservationState string

// Capacity reservation states.
const (
	CapacityReservationStateActive   CapacityReservationState = "active"
	CapacityReservationStateExpiring CapacityReservationState = "expiring"
)
