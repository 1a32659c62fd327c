package cloudprovider

import (
	"strings"
)

// EBSCSIDriver is the name the Amazon EBS CSI driver registers in CSINodes and StorageClasses.
const EBSCSIDriver = "ebs.csi.aws.com"

// EBSFacts are what the EBS CSI driver's attach limit for an instance type depends on.
type EBSFacts struct {
	// Name is the instance type, e.g. c5.large (its family and size pick the dedicated limit).
	Name string
	// Xen is set for the previous-generation (Xen) types; bare metal and Nitro types are not.
	Xen bool
	// NVMeInstanceStore is the number of NVMe instance store volumes, each taking a shared
	// attachment slot on Nitro.
	NVMeInstanceStore int32
	// Dedicated is the EBS-only limit EC2 reports for the type (DescribeInstanceTypes'
	// EbsInfo.MaximumEbsAttachments with AttachmentLimitType dedicated); 0 when not reported,
	// in which case the published list of dedicated-limit families decides.
	Dedicated int32
}

// The limits the EBS CSI driver starts from (docs/simulation.md cites the sources).
const (
	nitroSharedAttachments = 28 // EBS volumes, network interfaces and NVMe instance store share these
	xenAttachments         = 39
	bareMetalMaxVolumes    = 31
	// The driver reserves the root volume (block device mappings beyond the root: none on a
	// node Karpenter launches) and counts the network interfaces attached when it starts:
	// the primary one.
	bootVolumes   = 1
	attachedENIs  = 1
	minimumVolume = 1
)

// dedicatedFamilies are the Nitro families with an EBS limit of their own (not shared with
// network interfaces or instance store), by size in dedicatedLimits.
var dedicatedFamilies = map[string]bool{
	"m7a": true, "m7i": true, "m7i-flex": true, "c7a": true, "c7i": true, "c7i-flex": true,
	"r7a": true, "r7i": true, "r7iz": true, "r8g": true, "u7i": true, "g6": true, "gr6": true,
}

var dedicatedLimits = map[string]int32{
	"16xlarge": 48, "24xlarge": 64, "32xlarge": 88, "48xlarge": 128,
	"metal-16xl": 39, "metal-24xl": 39, "metal-32xl": 79, "metal-48xl": 79,
}

// dedicatedDefault is the limit of every other size of a dedicated family (medium to 12xlarge).
const dedicatedDefault = 32

// ebsMaxVolumes are types EC2 caps below the shared limit.
var ebsMaxVolumes = map[string]int32{
	"d3.8xlarge": 3, "d3en.12xlarge": 3, "g5.48xlarge": 9,
	"inf1.xlarge": 26, "inf1.2xlarge": 26, "inf1.6xlarge": 23, "inf1.24xlarge": 11, "mac1.metal": 16,
}

// EBSVolumeLimit is the attach limit the EBS CSI driver reports in the CSINode of a node of
// the type (CSINode spec.drivers[ebs.csi.aws.com].allocatable.count), worked out as the driver
// does with its default flags:
//   - Xen: 39 attachments;
//   - Nitro with a dedicated EBS limit: that limit;
//   - other Nitro: 28 shared attachments (or a lower per-type cap) less the attached network
//     interface and the NVMe instance store volumes;
//
// less the root volume in every case, and never below 1.
func EBSVolumeLimit(f EBSFacts) int32 {
	family, size, _ := strings.Cut(f.Name, ".")
	var limit int32
	switch {
	case f.Xen:
		limit = xenAttachments
	case f.Dedicated > 0:
		limit = f.Dedicated
	case dedicatedFamilies[family]:
		limit = dedicatedDefault
		if l, ok := dedicatedLimits[size]; ok {
			limit = l
		}
	default:
		limit = nitroSharedAttachments - attachedENIs
		capped, ok := ebsMaxVolumes[f.Name]
		if !ok && (size == "metal" || strings.HasPrefix(size, "metal-")) {
			capped, ok = bareMetalMaxVolumes, true
		}
		if ok {
			// A capped type counts only the network interfaces beyond the first.
			limit = min(capped, nitroSharedAttachments)
		}
		limit -= f.NVMeInstanceStore
	}
	return max(limit-bootVolumes, minimumVolume)
}
