package awsemulator

import (
	"strconv"

	"github.com/joinery-dev/joinery/cloudprovider/aws/catalogdata"
)

// The XML shapes below follow the member names of ec2's query deserializers (instanceTypeSet,
// vCpuInfo, networkCards, ...); lists are <name><item>...</item></name>.

type instanceTypeXML struct {
	InstanceType                  string                   `xml:"instanceType"`
	CurrentGeneration             bool                     `xml:"currentGeneration"`
	FreeTierEligible              bool                     `xml:"freeTierEligible"`
	SupportedUsageClasses         []string                 `xml:"supportedUsageClasses>item"`
	SupportedRootDeviceTypes      []string                 `xml:"supportedRootDeviceTypes>item"`
	SupportedVirtualizationTypes  []string                 `xml:"supportedVirtualizationTypes>item"`
	BareMetal                     bool                     `xml:"bareMetal"`
	Hypervisor                    string                   `xml:"hypervisor,omitempty"`
	ProcessorInfo                 processorInfoXML         `xml:"processorInfo"`
	VCpuInfo                      vcpuInfoXML              `xml:"vCpuInfo"`
	MemoryInfo                    memoryInfoXML            `xml:"memoryInfo"`
	InstanceStorageSupported      bool                     `xml:"instanceStorageSupported"`
	InstanceStorageInfo           *instanceStorageInfoXML  `xml:"instanceStorageInfo,omitempty"`
	EbsInfo                       ebsInfoXML               `xml:"ebsInfo"`
	NetworkInfo                   networkInfoXML           `xml:"networkInfo"`
	GpuInfo                       *gpuInfoXML              `xml:"gpuInfo,omitempty"`
	NeuronInfo                    *neuronInfoXML           `xml:"neuronInfo,omitempty"`
	BurstablePerformanceSupported bool                     `xml:"burstablePerformanceSupported"`
	HibernationSupported          bool                     `xml:"hibernationSupported"`
	DedicatedHostsSupported       bool                     `xml:"dedicatedHostsSupported"`
	AutoRecoverySupported         bool                     `xml:"autoRecoverySupported"`
	SupportedBootModes            []string                 `xml:"supportedBootModes>item"`
	NitroEnclavesSupport          string                   `xml:"nitroEnclavesSupport"`
	SupportedInRegion             bool                     `xml:"supportedInRegion"`
	PlacementGroupInfo            placementGroupInfoXML    `xml:"placementGroupInfo"`
	InferenceAcceleratorInfo      *inferenceAcceleratorXML `xml:"inferenceAcceleratorInfo,omitempty"`
}

type processorInfoXML struct {
	SupportedArchitectures   []string `xml:"supportedArchitectures>item"`
	SustainedClockSpeedInGhz float64  `xml:"sustainedClockSpeedInGhz"`
	Manufacturer             string   `xml:"manufacturer"`
}

type vcpuInfoXML struct {
	DefaultVCpus          int32   `xml:"defaultVCpus"`
	DefaultCores          int32   `xml:"defaultCores"`
	DefaultThreadsPerCore int32   `xml:"defaultThreadsPerCore"`
	ValidThreadsPerCore   []int32 `xml:"validThreadsPerCore>item,omitempty"`
}

type memoryInfoXML struct {
	SizeInMiB int64 `xml:"sizeInMiB"`
}

type instanceStorageInfoXML struct {
	TotalSizeInGB     int64         `xml:"totalSizeInGB"`
	Disks             []diskInfoXML `xml:"disks>item"`
	NvmeSupport       string        `xml:"nvmeSupport"`
	EncryptionSupport string        `xml:"encryptionSupport"`
}

type diskInfoXML struct {
	SizeInGB int64  `xml:"sizeInGB"`
	Count    int32  `xml:"count"`
	Type     string `xml:"type"`
}

type ebsInfoXML struct {
	EbsOptimizedSupport string               `xml:"ebsOptimizedSupport"`
	EncryptionSupport   string               `xml:"encryptionSupport"`
	EbsOptimizedInfo    *ebsOptimizedInfoXML `xml:"ebsOptimizedInfo,omitempty"`
	NvmeSupport         string               `xml:"nvmeSupport"`
}

type ebsOptimizedInfoXML struct {
	BaselineBandwidthInMbps int32 `xml:"baselineBandwidthInMbps"`
	MaximumBandwidthInMbps  int32 `xml:"maximumBandwidthInMbps"`
}

type networkInfoXML struct {
	NetworkPerformance           string               `xml:"networkPerformance"`
	MaximumNetworkInterfaces     int32                `xml:"maximumNetworkInterfaces"`
	MaximumNetworkCards          int32                `xml:"maximumNetworkCards"`
	DefaultNetworkCardIndex      int32                `xml:"defaultNetworkCardIndex"`
	NetworkCards                 []networkCardInfoXML `xml:"networkCards>item"`
	Ipv4AddressesPerInterface    int32                `xml:"ipv4AddressesPerInterface"`
	Ipv6AddressesPerInterface    int32                `xml:"ipv6AddressesPerInterface"`
	Ipv6Supported                bool                 `xml:"ipv6Supported"`
	EnaSupport                   string               `xml:"enaSupport"`
	EfaSupported                 bool                 `xml:"efaSupported"`
	EfaInfo                      *efaInfoXML          `xml:"efaInfo,omitempty"`
	EncryptionInTransitSupported bool                 `xml:"encryptionInTransitSupported"`
}

type networkCardInfoXML struct {
	NetworkCardIndex         int32   `xml:"networkCardIndex"`
	NetworkPerformance       string  `xml:"networkPerformance"`
	MaximumNetworkInterfaces int32   `xml:"maximumNetworkInterfaces"`
	BaselineBandwidthInGbps  float64 `xml:"baselineBandwidthInGbps"`
	PeakBandwidthInGbps      float64 `xml:"peakBandwidthInGbps"`
}

type efaInfoXML struct {
	MaximumEfaInterfaces int32 `xml:"maximumEfaInterfaces"`
}

type gpuInfoXML struct {
	Gpus                []gpuDeviceXML `xml:"gpus>item"`
	TotalGpuMemoryInMiB int32          `xml:"totalGpuMemoryInMiB"`
}

type gpuDeviceXML struct {
	Name         string          `xml:"name"`
	Manufacturer string          `xml:"manufacturer"`
	Count        int32           `xml:"count"`
	MemoryInfo   deviceMemoryXML `xml:"memoryInfo"`
}

type deviceMemoryXML struct {
	SizeInMiB int32 `xml:"sizeInMiB"`
}

type neuronInfoXML struct {
	NeuronDevices                []neuronDeviceXML `xml:"neuronDevices>item"`
	TotalNeuronDeviceMemoryInMiB int32             `xml:"totalNeuronDeviceMemoryInMiB"`
}

type neuronDeviceXML struct {
	Count      int32           `xml:"count"`
	Name       string          `xml:"name"`
	CoreInfo   neuronCoreXML   `xml:"coreInfo"`
	MemoryInfo deviceMemoryXML `xml:"memoryInfo"`
}

type neuronCoreXML struct {
	Count   int32 `xml:"count"`
	Version int32 `xml:"version"`
}

// inferenceAcceleratorXML is the older home of Inferentia devices; Neuron types carry both.
type inferenceAcceleratorXML struct {
	Accelerators []inferenceDeviceXML `xml:"accelerators>item"`
}

type inferenceDeviceXML struct {
	Count        int32           `xml:"count"`
	Name         string          `xml:"name"`
	Manufacturer string          `xml:"manufacturer"`
	MemoryInfo   deviceMemoryXML `xml:"memoryInfo"`
}

type placementGroupInfoXML struct {
	SupportedStrategies []string `xml:"supportedStrategies>item"`
}

// instanceTypeInfo renders a catalog record the way DescribeInstanceTypes answers.
func instanceTypeInfo(it *catalogdata.InstanceType) instanceTypeXML {
	out := instanceTypeXML{
		InstanceType:                 it.Name,
		CurrentGeneration:            it.CurrentGeneration,
		FreeTierEligible:             it.Name == "t2.micro" || it.Name == "t3.micro",
		SupportedUsageClasses:        it.UsageClasses,
		SupportedRootDeviceTypes:     []string{"ebs"},
		SupportedVirtualizationTypes: []string{"hvm"},
		BareMetal:                    it.BareMetal,
		Hypervisor:                   it.Hypervisor,
		ProcessorInfo: processorInfoXML{
			SupportedArchitectures:   []string{it.Arch},
			SustainedClockSpeedInGhz: it.ClockGHz,
			Manufacturer:             it.CPU,
		},
		VCpuInfo: vcpuInfoXML{
			DefaultVCpus:          it.VCPUs,
			DefaultCores:          it.Cores,
			DefaultThreadsPerCore: it.ThreadsPerCore,
		},
		MemoryInfo:                    memoryInfoXML{SizeInMiB: it.MemoryMiB},
		InstanceStorageSupported:      it.InstanceStoreTotalGB > 0,
		BurstablePerformanceSupported: it.Burstable,
		HibernationSupported:          !it.BareMetal && it.MemoryMiB <= 150*1024 && !it.Accelerated(),
		DedicatedHostsSupported:       !it.Burstable,
		AutoRecoverySupported:         it.InstanceStoreTotalGB == 0 && !it.BareMetal,
		SupportedBootModes:            []string{"uefi"},
		NitroEnclavesSupport:          "unsupported",
		SupportedInRegion:             true,
		PlacementGroupInfo:            placementGroupInfoXML{SupportedStrategies: []string{"cluster", "partition", "spread"}},
		EbsInfo: ebsInfoXML{
			EbsOptimizedSupport: "unsupported",
			EncryptionSupport:   "supported",
			NvmeSupport:         "required",
		},
	}
	if it.Arch == "x86_64" {
		out.SupportedBootModes = []string{"legacy-bios", "uefi"}
		if it.Burstable {
			// The small burstable x86 types still boot 32-bit AMIs.
			out.ProcessorInfo.SupportedArchitectures = []string{"i386", "x86_64"}
		}
	}
	if it.ThreadsPerCore == 2 {
		out.VCpuInfo.ValidThreadsPerCore = []int32{1, 2}
	}
	if it.Hypervisor == "nitro" && it.VCPUs >= 2 && !it.Burstable {
		out.NitroEnclavesSupport = "supported"
	}
	if it.Hypervisor == "xen" {
		out.EbsInfo.NvmeSupport = "unsupported"
	}
	if it.EBSMaximumMbps > 0 {
		out.EbsInfo.EbsOptimizedSupport = "default"
		out.EbsInfo.EbsOptimizedInfo = &ebsOptimizedInfoXML{BaselineBandwidthInMbps: it.EBSBaselineMbps, MaximumBandwidthInMbps: it.EBSMaximumMbps}
	}
	if it.InstanceStoreTotalGB > 0 {
		out.InstanceStorageInfo = &instanceStorageInfoXML{
			TotalSizeInGB:     it.InstanceStoreTotalGB,
			Disks:             []diskInfoXML{{SizeInGB: it.InstanceStoreDiskGB, Count: it.InstanceStoreDisks, Type: it.InstanceStoreType}},
			NvmeSupport:       "required",
			EncryptionSupport: "required",
		}
	}
	net := networkInfoXML{
		NetworkPerformance:           it.NetworkPerformance,
		MaximumNetworkInterfaces:     it.MaxENIs,
		MaximumNetworkCards:          it.NetworkCards,
		Ipv4AddressesPerInterface:    it.IPv4PerENI,
		Ipv6AddressesPerInterface:    it.IPv6PerENI,
		Ipv6Supported:                true,
		EnaSupport:                   "required",
		EfaSupported:                 it.MaxEFAInterfaces > 0,
		EncryptionInTransitSupported: it.EncryptionInTransit,
	}
	if it.Hypervisor == "xen" {
		net.EnaSupport = "supported"
	}
	perCard := it.MaxENIs / it.NetworkCards
	for i := range it.NetworkCards {
		net.NetworkCards = append(net.NetworkCards, networkCardInfoXML{
			NetworkCardIndex:         i,
			NetworkPerformance:       it.NetworkPerformance,
			MaximumNetworkInterfaces: perCard,
			BaselineBandwidthInGbps:  it.BaselineGbps / float64(it.NetworkCards),
			PeakBandwidthInGbps:      it.PeakGbps / float64(it.NetworkCards),
		})
	}
	if it.MaxEFAInterfaces > 0 {
		net.EfaInfo = &efaInfoXML{MaximumEfaInterfaces: it.MaxEFAInterfaces}
	}
	out.NetworkInfo = net
	if g := it.GPU; g != nil {
		out.GpuInfo = &gpuInfoXML{
			Gpus:                []gpuDeviceXML{{Name: g.Name, Manufacturer: g.Manufacturer, Count: g.Count, MemoryInfo: deviceMemoryXML{SizeInMiB: g.MemoryMiB}}},
			TotalGpuMemoryInMiB: g.Count * g.MemoryMiB,
		}
	}
	if n := it.Neuron; n != nil {
		out.NeuronInfo = &neuronInfoXML{
			NeuronDevices:                []neuronDeviceXML{{Count: n.Count, Name: n.Name, CoreInfo: neuronCoreXML{Count: n.Cores, Version: neuronCoreVersion(n.Name)}, MemoryInfo: deviceMemoryXML{SizeInMiB: n.MemoryMiB}}},
			TotalNeuronDeviceMemoryInMiB: n.Count * n.MemoryMiB,
		}
		out.InferenceAcceleratorInfo = &inferenceAcceleratorXML{Accelerators: []inferenceDeviceXML{{Count: n.Count, Name: n.Name, Manufacturer: n.Manufacturer, MemoryInfo: deviceMemoryXML{SizeInMiB: n.MemoryMiB}}}}
	}
	return out
}

func neuronCoreVersion(name string) int32 {
	if name == "Inferentia" {
		return 1
	}
	return 2
}

type instanceTypeOfferingXML struct {
	InstanceType string `xml:"instanceType"`
	LocationType string `xml:"locationType"`
	Location     string `xml:"location"`
}

type spotPriceXML struct {
	InstanceType       string `xml:"instanceType"`
	ProductDescription string `xml:"productDescription"`
	SpotPrice          string `xml:"spotPrice"`
	Timestamp          string `xml:"timestamp"`
	AvailabilityZone   string `xml:"availabilityZone"`
	AvailabilityZoneID string `xml:"availabilityZoneId"`
}

func formatPrice(p float64) string { return strconv.FormatFloat(p, 'f', 6, 64) }
