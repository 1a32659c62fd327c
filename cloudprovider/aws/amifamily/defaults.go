package amifamily

import (
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
)

// Metadata option values EC2 uses.
const (
	MetadataEnabled  = "enabled"
	MetadataDisabled = "disabled"
	MetadataRequired = "required"
)

// DefaultEphemeralStorage is the ephemeral-storage assumed when no block device says otherwise.
var DefaultEphemeralStorage = resource.MustParse("20Gi")

// DefaultMetadataOptions are the IMDS settings used when spec.metadataOptions is unset: IMDSv2
// only, and a hop limit of 1 so containers off the host network cannot reach IMDS.
func DefaultMetadataOptions() awsv1.MetadataOptions {
	return awsv1.MetadataOptions{
		HTTPEndpoint:            ptr.To(MetadataEnabled),
		HTTPProtocolIPv6:        ptr.To(MetadataDisabled),
		HTTPPutResponseHopLimit: ptr.To[int64](1),
		HTTPTokens:              ptr.To(MetadataRequired),
	}
}

// MetadataOptions is spec.metadataOptions with every unset field defaulted.
func MetadataOptions(spec *awsv1.MetadataOptions) awsv1.MetadataOptions {
	out := DefaultMetadataOptions()
	if spec == nil {
		return out
	}
	if spec.HTTPEndpoint != nil {
		out.HTTPEndpoint = ptr.To(*spec.HTTPEndpoint)
	}
	if spec.HTTPProtocolIPv6 != nil {
		out.HTTPProtocolIPv6 = ptr.To(*spec.HTTPProtocolIPv6)
	}
	if spec.HTTPPutResponseHopLimit != nil {
		out.HTTPPutResponseHopLimit = ptr.To(*spec.HTTPPutResponseHopLimit)
	}
	if spec.HTTPTokens != nil {
		out.HTTPTokens = ptr.To(*spec.HTTPTokens)
	}
	return out
}

func gp3Encrypted(device, size string) awsv1.BlockDeviceMapping {
	return awsv1.BlockDeviceMapping{
		DeviceName: ptr.To(device),
		EBS: &awsv1.BlockDevice{
			VolumeSize: ptr.To(resource.MustParse(size)),
			VolumeType: ptr.To("gp3"),
			Encrypted:  ptr.To(true),
		},
	}
}

// DefaultBlockDeviceMappings are the family's volumes when spec.blockDeviceMappings is empty;
// Custom has none (the AMI's own mappings apply).
func DefaultBlockDeviceMappings(family string) []awsv1.BlockDeviceMapping {
	switch family {
	case awsv1.AMIFamilyAL2, awsv1.AMIFamilyAL2023:
		return []awsv1.BlockDeviceMapping{gp3Encrypted("/dev/xvda", "20Gi")}
	case awsv1.AMIFamilyBottlerocket:
		// The OS volume, then the data volume holding images, logs and pod storage.
		return []awsv1.BlockDeviceMapping{gp3Encrypted("/dev/xvda", "4Gi"), gp3Encrypted("/dev/xvdb", "20Gi")}
	case awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025:
		return []awsv1.BlockDeviceMapping{gp3Encrypted("/dev/sda1", "50Gi")}
	}
	return nil
}

// BlockDeviceMappings are the mappings a launch uses: the class's own, else the family's.
func BlockDeviceMappings(family string, spec []awsv1.BlockDeviceMapping) []awsv1.BlockDeviceMapping {
	if len(spec) > 0 {
		return spec
	}
	return DefaultBlockDeviceMappings(family)
}

// RootDeviceName is the device the family's AMIs boot from; empty for Custom.
func RootDeviceName(family string) string {
	switch family {
	case awsv1.AMIFamilyAL2, awsv1.AMIFamilyAL2023, awsv1.AMIFamilyBottlerocket:
		return "/dev/xvda"
	case awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025:
		return "/dev/sda1"
	}
	return ""
}

// EphemeralDeviceName is the device whose filesystem kubelet and containerd use, which sizes the
// node's ephemeral-storage: the root volume, except on Bottlerocket whose data volume holds it.
// Empty for Custom.
func EphemeralDeviceName(family string) string {
	if family == awsv1.AMIFamilyBottlerocket {
		return "/dev/xvdb"
	}
	return RootDeviceName(family)
}

// EphemeralBlockDevice picks, among the mappings a launch uses, the one backing ephemeral-storage:
// the one marked rootVolume, else the family's ephemeral device, else (Custom, or a class that
// renamed its devices) the last mapping. Nil when there are no mappings.
func EphemeralBlockDevice(family string, mappings []awsv1.BlockDeviceMapping) *awsv1.BlockDeviceMapping {
	for i := range mappings {
		if mappings[i].RootVolume {
			return &mappings[i]
		}
	}
	if name := EphemeralDeviceName(family); name != "" {
		for i := range mappings {
			if mappings[i].DeviceName != nil && *mappings[i].DeviceName == name {
				return &mappings[i]
			}
		}
	}
	if len(mappings) == 0 {
		return nil
	}
	return &mappings[len(mappings)-1]
}

// EphemeralStorage is a node's ephemeral-storage capacity. With the RAID0 instance store policy
// and instance-store disks (instanceStore non-zero) it is their total size; otherwise the size of
// the EphemeralBlockDevice among BlockDeviceMappings(family, spec), or DefaultEphemeralStorage.
func EphemeralStorage(family string, spec []awsv1.BlockDeviceMapping, policy *awsv1.InstanceStorePolicy, instanceStore resource.Quantity) resource.Quantity {
	if policy != nil && *policy == awsv1.InstanceStorePolicyRAID0 && !instanceStore.IsZero() {
		return instanceStore.DeepCopy()
	}
	device := EphemeralBlockDevice(family, BlockDeviceMappings(family, spec))
	if device == nil || device.EBS == nil || device.EBS.VolumeSize == nil {
		return DefaultEphemeralStorage.DeepCopy()
	}
	return device.EBS.VolumeSize.DeepCopy()
}
