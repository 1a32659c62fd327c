package v1

// Group is the API group of the AWS provider's kinds (EC2NodeClass).
const Group = "karpenter.k8s.aws"

// Well-known labels of EC2 instance types, set on nodes and usable in NodePool and pod requirements.
const (
	LabelInstanceHypervisor                   = Group + "/instance-hypervisor"
	LabelInstanceEncryptionInTransitSupported = Group + "/instance-encryption-in-transit-supported"
	LabelInstanceCategory                     = Group + "/instance-category"
	LabelInstanceFamily                       = Group + "/instance-family"
	LabelInstanceGeneration                   = Group + "/instance-generation"
	LabelInstanceLocalNVME                    = Group + "/instance-local-nvme"
	LabelInstanceSize                         = Group + "/instance-size"
	LabelInstanceCPU                          = Group + "/instance-cpu"
	LabelInstanceCPUManufacturer              = Group + "/instance-cpu-manufacturer"
	LabelInstanceCPUSustainedClockSpeedMhz    = Group + "/instance-cpu-sustained-clock-speed-mhz"
	LabelInstanceMemory                       = Group + "/instance-memory"
	LabelInstancePods                         = Group + "/instance-pods"
	LabelInstanceEBSBandwidth                 = Group + "/instance-ebs-bandwidth"
	LabelInstanceNetworkBandwidth             = Group + "/instance-network-bandwidth"
	LabelInstanceGPUName                      = Group + "/instance-gpu-name"
	LabelInstanceGPUManufacturer              = Group + "/instance-gpu-manufacturer"
	LabelInstanceGPUCount                     = Group + "/instance-gpu-count"
	LabelInstanceGPUMemory                    = Group + "/instance-gpu-memory"
	LabelInstanceAcceleratorName              = Group + "/instance-accelerator-name"
	LabelInstanceAcceleratorManufacturer      = Group + "/instance-accelerator-manufacturer"
	LabelInstanceAcceleratorCount             = Group + "/instance-accelerator-count"
	LabelInstanceCapabilityFlex               = Group + "/instance-capability-flex"
	LabelCapacityReservationID                = Group + "/capacity-reservation-id"
	LabelCapacityReservationType              = Group + "/capacity-reservation-type"
	LabelTopologyZoneID                       = "topology.k8s.aws/zone-id"
	// LabelEBSCSIZone is the zone key the EBS CSI driver registers on its nodes; the volumes it
	// provisions carry it in their node affinity. It stands for topology.kubernetes.io/zone.
	LabelEBSCSIZone = "topology.ebs.csi.aws.com/zone"
)

// InstanceTypeLabels are the well-known labels whose values an instance type decides (its shape,
// not the zone or capacity type it is bought in).
var InstanceTypeLabels = []string{
	LabelInstanceHypervisor,
	LabelInstanceEncryptionInTransitSupported,
	LabelInstanceCategory,
	LabelInstanceFamily,
	LabelInstanceGeneration,
	LabelInstanceLocalNVME,
	LabelInstanceSize,
	LabelInstanceCPU,
	LabelInstanceCPUManufacturer,
	LabelInstanceCPUSustainedClockSpeedMhz,
	LabelInstanceMemory,
	LabelInstancePods,
	LabelInstanceEBSBandwidth,
	LabelInstanceNetworkBandwidth,
	LabelInstanceGPUName,
	LabelInstanceGPUManufacturer,
	LabelInstanceGPUCount,
	LabelInstanceGPUMemory,
	LabelInstanceAcceleratorName,
	LabelInstanceAcceleratorManufacturer,
	LabelInstanceAcceleratorCount,
	LabelInstanceCapabilityFlex,
}

// WellKnownLabels are the AWS provider's well-known label keys: those of its offerings
// (capacity reservation, zone ID), of its instance types and the placement group (not the
// partition, which is known only after the launch). The provider registers them with
// joinery's well-known labels at init (cloudprovider/aws/instancetype).
var WellKnownLabels = append([]string{
	LabelCapacityReservationID,
	LabelCapacityReservationType,
	LabelTopologyZoneID,
	LabelPlacementGroupID,
}, InstanceTypeLabels...)

// Annotations and tags.
const (
	AnnotationEC2NodeClassHash        = Group + "/ec2nodeclass-hash"
	AnnotationEC2NodeClassHashVersion = Group + "/ec2nodeclass-hash-version"
	AnnotationKubeletDriftHash        = Group + "/kubelet-drift-hash"
	TagNodeClaim                      = "karpenter.sh/nodeclaim"
	TagNodePool                       = "karpenter.sh/nodepool"
	TagEC2NodeClass                   = Group + "/ec2nodeclass"
	TagManagedLaunchTemplate          = Group + "/cluster"
)
