package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EC2NodeClass is the AWS-specific configuration of the nodes a NodePool launches: which
// subnets, security groups and AMIs to use, the node identity, kubelet settings, storage and
// instance metadata options. NodePools reference it through spec.template.spec.nodeClassRef.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=ec2nodeclasses,scope=Cluster,categories=karpenter,shortName={ec2nc,ec2ncs}
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Role",type="string",JSONPath=".spec.role",priority=1
type EC2NodeClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   EC2NodeClassSpec   `json:"spec"`
	Status EC2NodeClassStatus `json:"status,omitempty"`
}

// EC2NodeClassList is a list of EC2NodeClasses.
//
// +kubebuilder:object:root=true
type EC2NodeClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EC2NodeClass `json:"items"`
}

// GetConditions returns the class's status conditions; Ready says whether NodePools may launch
// with it (cloudprovider.NodeClass).
func (in *EC2NodeClass) GetConditions() []metav1.Condition { return in.Status.Conditions }

// EC2NodeClassSpec is the desired configuration of the nodes launched from this class.
//
// The node identity is either a role (joinery manages an instance profile for it) or a
// pre-provisioned instance profile; switching between the two would leak the managed profile.
//
// +kubebuilder:validation:XValidation:rule="has(self.role) != has(self.instanceProfile)",message="must specify exactly one of ['role', 'instanceProfile']"
// +kubebuilder:validation:XValidation:rule="has(oldSelf.role) == has(self.role)",message="changing between 'role' and 'instanceProfile' is not supported; delete and recreate the EC2NodeClass instead"
// +kubebuilder:validation:XValidation:rule="has(self.amiFamily) || (has(self.amiSelectorTerms) && self.amiSelectorTerms.exists(t, has(t.alias)))",message="amiFamily is required unless amiSelectorTerms uses an alias",fieldPath=".amiFamily",reason=FieldValueRequired
type EC2NodeClassSpec struct {
	// Kubelet overrides a subset of the kubelet configuration of launched nodes. These values
	// also drive scheduling (pod density, allocatable resources).
	// +optional
	Kubelet *KubeletConfiguration `json:"kubelet,omitempty"`

	// AMIFamily selects the bootstrap user data and default block device mappings. It may be
	// omitted when amiSelectorTerms uses an alias, which implies the family.
	// +kubebuilder:validation:Enum:={AL2,AL2023,Bottlerocket,Custom,Windows2019,Windows2022,Windows2025}
	// +optional
	AMIFamily *string `json:"amiFamily,omitempty"`

	// SubnetSelectorTerms discover the subnets instances launch into. Terms are ORed; the
	// conditions within one term are ANDed.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=30
	// +required
	SubnetSelectorTerms []SubnetSelectorTerm `json:"subnetSelectorTerms"`

	// SecurityGroupSelectorTerms discover the security groups attached to instances. Terms are
	// ORed; the conditions within one term are ANDed.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=30
	// +required
	SecurityGroupSelectorTerms []SecurityGroupSelectorTerm `json:"securityGroupSelectorTerms"`

	// AMISelectorTerms discover the AMIs instances boot from. Terms are ORed; the conditions
	// within one term are ANDed. An alias term selects EKS-optimized AMIs and must stand alone.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=30
	// +kubebuilder:validation:XValidation:rule="!self.exists(t, has(t.alias)) || self.size() == 1",message="'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms"
	// +required
	AMISelectorTerms []AMISelectorTerm `json:"amiSelectorTerms"`

	// CapacityReservationSelectorTerms discover on-demand capacity reservations that are used
	// before falling back to on-demand and spot capacity.
	// +kubebuilder:validation:MaxItems=30
	// +optional
	CapacityReservationSelectorTerms []CapacityReservationSelectorTerm `json:"capacityReservationSelectorTerms,omitempty"`

	// Role is the IAM role nodes assume; joinery creates and manages an instance profile for
	// it. Immutable once set.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="role is immutable"
	// +optional
	Role string `json:"role,omitempty"`

	// InstanceProfile is a pre-provisioned IAM instance profile that joinery uses as is.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +optional
	InstanceProfile *string `json:"instanceProfile,omitempty"`

	// Tags are added to every EC2 resource joinery creates (instances, volumes, launch
	// templates), merged with the tags joinery sets itself, which may not be overridden.
	// +kubebuilder:validation:MaxProperties=50
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != '')",message="empty tag keys aren't supported"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('kubernetes.io/cluster/'))",message="tag contains a restricted tag matching kubernetes.io/cluster/"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != 'karpenter.sh/nodepool')",message="tag contains a restricted tag matching karpenter.sh/nodepool"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != 'karpenter.sh/nodeclaim')",message="tag contains a restricted tag matching karpenter.sh/nodeclaim"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != 'karpenter.sh/managed-by')",message="tag contains a restricted tag matching karpenter.sh/managed-by"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != 'karpenter.k8s.aws/ec2nodeclass')",message="tag contains a restricted tag matching karpenter.k8s.aws/ec2nodeclass"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != 'eks:eks-cluster-name')",message="tag contains a restricted tag matching eks:eks-cluster-name"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`

	// MetadataOptions configure the instance metadata service (IMDS) of launched instances.
	// +kubebuilder:default={"httpEndpoint":"enabled","httpProtocolIPv6":"disabled","httpPutResponseHopLimit":1,"httpTokens":"required"}
	// +optional
	MetadataOptions *MetadataOptions `json:"metadataOptions,omitempty"`

	// BlockDeviceMappings replace the AMI family's default EBS volumes.
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:XValidation:rule="self.filter(m, has(m.rootVolume) && m.rootVolume).size() <= 1",message="must have only one blockDeviceMappings with rootVolume"
	// +optional
	BlockDeviceMappings []BlockDeviceMapping `json:"blockDeviceMappings,omitempty"`

	// InstanceStorePolicy says how instance-store volumes are used. RAID0 assembles them into
	// one array that backs the node's ephemeral storage; unset ignores them.
	// +optional
	InstanceStorePolicy *InstanceStorePolicy `json:"instanceStorePolicy,omitempty"`

	// UserData is merged with the user data the AMI family generates (or used verbatim for the
	// Custom family).
	// +optional
	UserData *string `json:"userData,omitempty"`

	// DetailedMonitoring enables EC2 detailed (1-minute) monitoring on launched instances.
	// +optional
	DetailedMonitoring *bool `json:"detailedMonitoring,omitempty"`

	// AssociatePublicIPAddress overrides the subnet's MapPublicIpOnLaunch setting.
	// +optional
	AssociatePublicIPAddress *bool `json:"associatePublicIPAddress,omitempty"`

	// IPPrefixCount is the number of IPv4 prefixes (/28 blocks) EC2 assigns to the primary
	// network interface at launch (the launch template's Ipv4PrefixCount). It changes neither
	// the drift hash nor the pod density joinery plans with, as in Karpenter.
	// +kubebuilder:validation:Minimum=0
	// +optional
	IPPrefixCount *int32 `json:"ipPrefixCount,omitempty"`

	// PlacementGroupSelector selects the one existing EC2 placement group, by name or by id,
	// that every instance of this class launches into.
	// +optional
	PlacementGroupSelector *PlacementGroupSelector `json:"placementGroupSelector,omitempty"`
}

// AMI families, the values of spec.amiFamily.
const (
	AMIFamilyAL2          = "AL2"
	AMIFamilyAL2023       = "AL2023"
	AMIFamilyBottlerocket = "Bottlerocket"
	AMIFamilyWindows2019  = "Windows2019"
	AMIFamilyWindows2022  = "Windows2022"
	AMIFamilyWindows2025  = "Windows2025"
	AMIFamilyCustom       = "Custom"
)

// windowsBuilds are the Windows build numbers (node.kubernetes.io/windows-build) of the
// Windows Server releases the Windows families run.
var windowsBuilds = map[string]string{
	AMIFamilyWindows2019: "10.0.17763",
	AMIFamilyWindows2022: "10.0.20348",
	AMIFamilyWindows2025: "10.0.26100",
}

// WindowsBuild is the Windows build number of family's nodes, "" for a family that is not
// Windows.
func WindowsBuild(family string) string { return windowsBuilds[family] }

// InstanceStorePolicy says how instance-store volumes are used.
// +kubebuilder:validation:Enum:={RAID0}
type InstanceStorePolicy string

// InstanceStorePolicyRAID0 combines all instance-store volumes into one RAID0 array that backs
// the kubelet's and the container runtime's storage.
const InstanceStorePolicyRAID0 InstanceStorePolicy = "RAID0"
