package catalogdata

// family describes one instance family. Per-size lists are space-separated and follow sizes;
// a list left empty means the regular value (see expand.go).
type family struct {
	name       string
	arch       string // x86_64 or arm64, as EC2 names architectures
	cpu        string // processor manufacturer as EC2 reports it: Intel, AMD, AWS
	clockGHz   float64
	hypervisor string // nitro or xen; bare-metal sizes have none
	gibPerVCPU float64
	sizes      string
	vcpus      string // when the vCPU count does not follow from the size name
	memGiB     string // when memory is not gibPerVCPU × vCPUs
	enis       string // "interfaces/ipv4PerInterface", when not the Nitro default for the vCPUs
	cards      string // network cards, when more than one
	disks      string // instance store "countxGB" ("-" for none)
	diskType   string // ssd unless hdd
	gpu        *device
	gpus       string
	neuron     *device
	neurons    string
	efa        string // EFA interfaces
	net        network
	ebs        ebs
	rate       float64 // us-east-1 Linux on-demand $ per vCPU-hour
	prices     string  // explicit on-demand $ per hour
	eit        bool    // encryption in transit between instances
	burstable  bool
	flex       bool
	noSMT      bool // one thread per core
}

// device is a GPU or Neuron accelerator model.
type device struct {
	name         string
	manufacturer string
	memMiB       int32
	cores        int32 // Neuron cores per device
}

// network is how a family's bandwidth grows with size: baseline Gbps per vCPU up to maxGbps,
// or an explicit table by size name; sizes below 32 vCPUs burst "up to" upTo Gbps.
type network struct {
	perVCPU, maxGbps float64
	table            map[string]float64
	upTo             string
	performance      string // fixed NetworkPerformance for every size (older families)
}

// ebs is a family's EBS-optimized bandwidth: maxMbps at atVCPUs, proportionally less for
// smaller sizes but never below burstMbps.
type ebs struct {
	burstMbps, maxMbps, atVCPUs int32
}

var (
	gpuT4     = &device{name: "T4", manufacturer: "NVIDIA", memMiB: 16384}
	gpuA10G   = &device{name: "A10G", manufacturer: "NVIDIA", memMiB: 24576}
	gpuL4     = &device{name: "L4", manufacturer: "NVIDIA", memMiB: 22888}
	gpuV100   = &device{name: "V100", manufacturer: "NVIDIA", memMiB: 16384}
	gpuV100DN = &device{name: "V100", manufacturer: "NVIDIA", memMiB: 32768}
	gpuA100   = &device{name: "A100", manufacturer: "NVIDIA", memMiB: 40960}
	gpuH100   = &device{name: "H100", manufacturer: "NVIDIA", memMiB: 81920}
	gpuV520   = &device{name: "Radeon Pro V520", manufacturer: "AMD", memMiB: 8192}
	inferent2 = &device{name: "Inferentia2", manufacturer: "AWS", memMiB: 32768, cores: 2}
	trainium  = &device{name: "Trainium", manufacturer: "AWS", memMiB: 32768, cores: 2}
)

var (
	net5 = network{upTo: "10", table: map[string]float64{
		"large": 0.75, "xlarge": 1.25, "2xlarge": 2.5, "4xlarge": 5, "8xlarge": 10, "9xlarge": 12,
		"12xlarge": 12, "16xlarge": 20, "18xlarge": 25, "24xlarge": 25, "metal": 25}}
	netGraviton2 = network{upTo: "10", table: map[string]float64{
		"medium": 0.5, "large": 0.75, "xlarge": 1.25, "2xlarge": 2.5, "4xlarge": 5, "8xlarge": 12,
		"12xlarge": 20, "16xlarge": 25, "metal": 25}}
	net5n = network{upTo: "25", table: map[string]float64{
		"large": 3, "xlarge": 5, "2xlarge": 10, "4xlarge": 15, "9xlarge": 50, "18xlarge": 100, "metal": 100}}
	net6    = network{perVCPU: 0.390625, maxGbps: 50, upTo: "12.5"}
	netG3   = network{perVCPU: 0.46875, maxGbps: 30, upTo: "12.5"}
	netG4   = network{perVCPU: 0.46875, maxGbps: 50, upTo: "12.5"}
	netT    = network{upTo: "5", table: map[string]float64{"nano": 0.032, "micro": 0.064, "small": 0.128, "medium": 0.256, "large": 0.512, "xlarge": 1.024, "2xlarge": 2.048}}
	netT2   = network{performance: "Low to Moderate", table: map[string]float64{"nano": 0.032, "micro": 0.064, "small": 0.128, "medium": 0.256, "large": 0.512, "xlarge": 1.024, "2xlarge": 2.048}}
	netX2   = network{perVCPU: 0.78125, maxGbps: 100, upTo: "25"}
	netI3en = network{upTo: "25", table: map[string]float64{"large": 2.1, "xlarge": 4.2, "2xlarge": 8.4, "3xlarge": 12.5, "6xlarge": 25, "12xlarge": 50, "24xlarge": 100, "metal": 100}}
	netI4i  = network{perVCPU: 0.390625, maxGbps: 75, upTo: "12.5"}
	netI4g  = network{perVCPU: 0.390625, maxGbps: 37.5, upTo: "12.5"}
	netD3   = network{upTo: "15", table: map[string]float64{"xlarge": 3, "2xlarge": 6, "4xlarge": 12.5, "8xlarge": 25}}
	netG4dn = network{upTo: "25", table: map[string]float64{"xlarge": 5, "2xlarge": 10, "4xlarge": 20, "8xlarge": 50, "12xlarge": 50, "16xlarge": 50, "metal": 100}}
	netG4ad = network{upTo: "10", table: map[string]float64{"xlarge": 2, "2xlarge": 4.167, "4xlarge": 8.333, "8xlarge": 15, "16xlarge": 25}}
	netG5   = network{upTo: "25", table: map[string]float64{"xlarge": 2.5, "2xlarge": 5, "4xlarge": 10, "8xlarge": 25, "12xlarge": 40, "16xlarge": 25, "24xlarge": 50, "48xlarge": 100}}
	netP3   = network{upTo: "10", table: map[string]float64{"2xlarge": 2.5, "8xlarge": 10, "16xlarge": 25}}
	netP3dn = network{table: map[string]float64{"24xlarge": 100}}
	netP4d  = network{table: map[string]float64{"24xlarge": 400}}
	netP5   = network{table: map[string]float64{"48xlarge": 3200}}
	netInf2 = network{upTo: "15", table: map[string]float64{"xlarge": 2.083, "8xlarge": 16.667, "24xlarge": 50, "48xlarge": 100}}
	netTrn1 = network{upTo: "12.5", table: map[string]float64{"2xlarge": 3.125, "32xlarge": 800}}
	ebs5    = ebs{4750, 19000, 96}
	ebs5a   = ebs{3170, 9500, 96}
	ebs5n   = ebs{4750, 19000, 72}
	ebsG2   = ebs{4750, 19000, 64}
	ebs6i   = ebs{10000, 40000, 128}
	ebs6a   = ebs{10000, 40000, 192}
	ebsG3   = ebs{10000, 20000, 64}
	ebs7    = ebs{10000, 40000, 192}
	ebsT3   = ebs{2085, 2780, 8}
	ebsI3   = ebs{0, 14000, 64}
	ebsX2   = ebs{20000, 80000, 128}
	ebsD3   = ebs{2800, 5000, 32}
	ebsG4dn = ebs{3500, 19000, 96}
	ebsG4ad = ebs{3170, 6300, 64}
	ebsG5   = ebs{3500, 19000, 192}
	ebsG6   = ebs{5000, 60000, 192}
	ebsP3   = ebs{0, 14000, 64}
	ebsP    = ebs{19000, 19000, 96}
	ebsP5   = ebs{80000, 80000, 192}
	ebsInf2 = ebs{10000, 60000, 192}
	ebsTrn1 = ebs{20000, 80000, 128}
)

// Size lists shared by several families.
const (
	sizes5      = "large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge metal"
	sizes5a     = "large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge"
	sizesC5     = "large xlarge 2xlarge 4xlarge 9xlarge 12xlarge 18xlarge 24xlarge metal"
	sizes6i     = "large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge 32xlarge metal"
	sizes6a     = "large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge 32xlarge 48xlarge metal"
	sizesG      = "medium large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge metal"
	sizes7i     = "large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge 48xlarge metal-24xl metal-48xl"
	sizes7a     = "medium large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge 32xlarge 48xlarge metal-48xl"
	sizesG4     = "medium large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge 48xlarge metal-24xl metal-48xl"
	sizesT      = "nano micro small medium large xlarge 2xlarge"
	disks5d     = "1x75 1x150 1x300 2x300 2x600 2x900 4x600 4x900 4x900"
	disksC5d    = "1x50 1x100 1x200 1x400 1x900 2x900 2x900 4x900 4x900"
	disks6id    = "1x118 1x237 1x474 1x950 1x1900 2x1425 2x1900 4x1425 4x1900 4x1900"
	disksGd     = "1x59 1x118 1x237 1x474 1x950 1x1900 2x1425 2x1900 2x1900"
	efa6i       = "0 0 0 0 0 0 0 0 1 1"
	efa6a       = "0 0 0 0 0 0 0 0 0 1 1"
	efaG        = "0 0 0 0 0 0 0 1 1"
	efa7i       = "0 0 0 0 0 0 0 0 1 0 1"
	efa7a       = "0 0 0 0 0 0 0 0 0 0 1 1"
	efaG4       = "0 0 0 0 0 0 0 0 1 1 1 1"
	memT        = "0.5 1 2 4 8 16 32"
	vcpusT      = "2 2 2 2 2 4 8"
	enisT3      = "2/2 2/2 3/4 3/6 3/12 4/15 4/15"
	gpuSizesG56 = "xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge 48xlarge"
)

var families = []family{
	// Compute optimized.
	{name: "c5", arch: "x86_64", cpu: "Intel", clockGHz: 3.4, hypervisor: "nitro", gibPerVCPU: 2, sizes: sizesC5, net: net5, ebs: ebs5, rate: 0.0425},
	{name: "c5d", arch: "x86_64", cpu: "Intel", clockGHz: 3.4, hypervisor: "nitro", gibPerVCPU: 2, sizes: sizesC5, disks: disksC5d, net: net5, ebs: ebs5, rate: 0.048},
	{name: "c5a", arch: "x86_64", cpu: "AMD", clockGHz: 3.3, hypervisor: "nitro", gibPerVCPU: 2, sizes: sizes5a, net: net5, ebs: ebs5a, rate: 0.0385, eit: true},
	{name: "c5n", arch: "x86_64", cpu: "Intel", clockGHz: 3.4, hypervisor: "nitro", sizes: "large xlarge 2xlarge 4xlarge 9xlarge 18xlarge metal", memGiB: "5.25 10.5 21 42 96 192 192", efa: "0 0 0 0 1 1 1", net: net5n, ebs: ebs5n, rate: 0.054, eit: true},
	{name: "c6i", arch: "x86_64", cpu: "Intel", clockGHz: 3.5, hypervisor: "nitro", gibPerVCPU: 2, sizes: sizes6i, efa: efa6i, net: net6, ebs: ebs6i, rate: 0.0425, eit: true},
	{name: "c6id", arch: "x86_64", cpu: "Intel", clockGHz: 3.5, hypervisor: "nitro", gibPerVCPU: 2, sizes: sizes6i, disks: disks6id, efa: efa6i, net: net6, ebs: ebs6i, rate: 0.0504, eit: true},
	{name: "c6a", arch: "x86_64", cpu: "AMD", clockGHz: 3.6, hypervisor: "nitro", gibPerVCPU: 2, sizes: sizes6a, efa: efa6a, net: net6, ebs: ebs6a, rate: 0.03825, eit: true},
	{name: "c6g", arch: "arm64", cpu: "AWS", clockGHz: 2.5, hypervisor: "nitro", gibPerVCPU: 2, sizes: sizesG, net: netGraviton2, ebs: ebsG2, rate: 0.034, noSMT: true},
	{name: "c6gd", arch: "arm64", cpu: "AWS", clockGHz: 2.5, hypervisor: "nitro", gibPerVCPU: 2, sizes: sizesG, disks: disksGd, net: netGraviton2, ebs: ebsG2, rate: 0.0384, noSMT: true},
	{name: "c7g", arch: "arm64", cpu: "AWS", clockGHz: 2.6, hypervisor: "nitro", gibPerVCPU: 2, sizes: sizesG, efa: efaG, net: netG3, ebs: ebsG3, rate: 0.03625, eit: true, noSMT: true},
	{name: "c7gd", arch: "arm64", cpu: "AWS", clockGHz: 2.6, hypervisor: "nitro", gibPerVCPU: 2, sizes: sizesG, disks: disksGd, efa: efaG, net: netG3, ebs: ebsG3, rate: 0.04535, eit: true, noSMT: true},
	{name: "c7i", arch: "x86_64", cpu: "Intel", clockGHz: 3.2, hypervisor: "nitro", gibPerVCPU: 2, sizes: sizes7i, efa: efa7i, net: net6, ebs: ebs7, rate: 0.044625, eit: true},
	{name: "c7a", arch: "x86_64", cpu: "AMD", clockGHz: 3.7, hypervisor: "nitro", gibPerVCPU: 2, sizes: sizes7a, efa: efa7a, net: net6, ebs: ebs7, rate: 0.05132, eit: true, noSMT: true},
	{name: "c8g", arch: "arm64", cpu: "AWS", clockGHz: 2.8, hypervisor: "nitro", gibPerVCPU: 2, sizes: sizesG4, efa: efaG4, net: netG4, ebs: ebs7, rate: 0.03988, eit: true, noSMT: true},

	// General purpose.
	{name: "m5", arch: "x86_64", cpu: "Intel", clockGHz: 3.1, hypervisor: "nitro", gibPerVCPU: 4, sizes: sizes5, net: net5, ebs: ebs5, rate: 0.048},
	{name: "m5d", arch: "x86_64", cpu: "Intel", clockGHz: 3.1, hypervisor: "nitro", gibPerVCPU: 4, sizes: sizes5, disks: disks5d, net: net5, ebs: ebs5, rate: 0.0565},
	{name: "m5a", arch: "x86_64", cpu: "AMD", clockGHz: 2.5, hypervisor: "nitro", gibPerVCPU: 4, sizes: sizes5a, net: net5, ebs: ebs{2880, 13750, 96}, rate: 0.043},
	{name: "m6i", arch: "x86_64", cpu: "Intel", clockGHz: 3.5, hypervisor: "nitro", gibPerVCPU: 4, sizes: sizes6i, efa: efa6i, net: net6, ebs: ebs6i, rate: 0.048, eit: true},
	{name: "m6id", arch: "x86_64", cpu: "Intel", clockGHz: 3.5, hypervisor: "nitro", gibPerVCPU: 4, sizes: sizes6i, disks: disks6id, efa: efa6i, net: net6, ebs: ebs6i, rate: 0.05935, eit: true},
	{name: "m6a", arch: "x86_64", cpu: "AMD", clockGHz: 3.6, hypervisor: "nitro", gibPerVCPU: 4, sizes: sizes6a, efa: efa6a, net: net6, ebs: ebs6a, rate: 0.0432, eit: true},
	{name: "m6g", arch: "arm64", cpu: "AWS", clockGHz: 2.5, hypervisor: "nitro", gibPerVCPU: 4, sizes: sizesG, net: netGraviton2, ebs: ebsG2, rate: 0.0385, noSMT: true},
	{name: "m6gd", arch: "arm64", cpu: "AWS", clockGHz: 2.5, hypervisor: "nitro", gibPerVCPU: 4, sizes: sizesG, disks: disksGd, net: netGraviton2, ebs: ebsG2, rate: 0.0452, noSMT: true},
	{name: "m7g", arch: "arm64", cpu: "AWS", clockGHz: 2.6, hypervisor: "nitro", gibPerVCPU: 4, sizes: sizesG, efa: efaG, net: netG3, ebs: ebsG3, rate: 0.0408, eit: true, noSMT: true},
	{name: "m7gd", arch: "arm64", cpu: "AWS", clockGHz: 2.6, hypervisor: "nitro", gibPerVCPU: 4, sizes: sizesG, disks: disksGd, efa: efaG, net: netG3, ebs: ebsG3, rate: 0.0534, eit: true, noSMT: true},
	{name: "m7i", arch: "x86_64", cpu: "Intel", clockGHz: 3.2, hypervisor: "nitro", gibPerVCPU: 4, sizes: sizes7i, efa: efa7i, net: net6, ebs: ebs7, rate: 0.0504, eit: true},
	{name: "m7i-flex", arch: "x86_64", cpu: "Intel", clockGHz: 3.2, hypervisor: "nitro", gibPerVCPU: 4, sizes: "large xlarge 2xlarge 4xlarge 8xlarge", net: net6, ebs: ebs{10000, 10000, 32}, rate: 0.04788, eit: true, flex: true},
	{name: "m7a", arch: "x86_64", cpu: "AMD", clockGHz: 3.7, hypervisor: "nitro", gibPerVCPU: 4, sizes: sizes7a, efa: efa7a, net: net6, ebs: ebs7, rate: 0.05796, eit: true, noSMT: true},
	{name: "m8g", arch: "arm64", cpu: "AWS", clockGHz: 2.8, hypervisor: "nitro", gibPerVCPU: 4, sizes: sizesG4, efa: efaG4, net: netG4, ebs: ebs7, rate: 0.04488, eit: true, noSMT: true},

	// Memory optimized.
	{name: "r5", arch: "x86_64", cpu: "Intel", clockGHz: 3.1, hypervisor: "nitro", gibPerVCPU: 8, sizes: sizes5, net: net5, ebs: ebs5, rate: 0.063},
	{name: "r5d", arch: "x86_64", cpu: "Intel", clockGHz: 3.1, hypervisor: "nitro", gibPerVCPU: 8, sizes: sizes5, disks: disks5d, net: net5, ebs: ebs5, rate: 0.072},
	{name: "r5a", arch: "x86_64", cpu: "AMD", clockGHz: 2.5, hypervisor: "nitro", gibPerVCPU: 8, sizes: sizes5a, net: net5, ebs: ebs{2880, 13750, 96}, rate: 0.0565},
	{name: "r6i", arch: "x86_64", cpu: "Intel", clockGHz: 3.5, hypervisor: "nitro", gibPerVCPU: 8, sizes: sizes6i, efa: efa6i, net: net6, ebs: ebs6i, rate: 0.063, eit: true},
	{name: "r6id", arch: "x86_64", cpu: "Intel", clockGHz: 3.5, hypervisor: "nitro", gibPerVCPU: 8, sizes: sizes6i, disks: disks6id, efa: efa6i, net: net6, ebs: ebs6i, rate: 0.0756, eit: true},
	{name: "r6a", arch: "x86_64", cpu: "AMD", clockGHz: 3.6, hypervisor: "nitro", gibPerVCPU: 8, sizes: sizes6a, efa: efa6a, net: net6, ebs: ebs6a, rate: 0.0567, eit: true},
	{name: "r6g", arch: "arm64", cpu: "AWS", clockGHz: 2.5, hypervisor: "nitro", gibPerVCPU: 8, sizes: sizesG, net: netGraviton2, ebs: ebsG2, rate: 0.0504, noSMT: true},
	{name: "r6gd", arch: "arm64", cpu: "AWS", clockGHz: 2.5, hypervisor: "nitro", gibPerVCPU: 8, sizes: sizesG, disks: disksGd, net: netGraviton2, ebs: ebsG2, rate: 0.0576, noSMT: true},
	{name: "r7g", arch: "arm64", cpu: "AWS", clockGHz: 2.6, hypervisor: "nitro", gibPerVCPU: 8, sizes: sizesG, efa: efaG, net: netG3, ebs: ebsG3, rate: 0.05355, eit: true, noSMT: true},
	{name: "r7i", arch: "x86_64", cpu: "Intel", clockGHz: 3.2, hypervisor: "nitro", gibPerVCPU: 8, sizes: sizes7i, efa: efa7i, net: net6, ebs: ebs7, rate: 0.06615, eit: true},
	{name: "r7a", arch: "x86_64", cpu: "AMD", clockGHz: 3.7, hypervisor: "nitro", gibPerVCPU: 8, sizes: sizes7a, efa: efa7a, net: net6, ebs: ebs7, rate: 0.0761, eit: true, noSMT: true},
	{name: "r8g", arch: "arm64", cpu: "AWS", clockGHz: 2.8, hypervisor: "nitro", gibPerVCPU: 8, sizes: sizesG4, efa: efaG4, net: netG4, ebs: ebs7, rate: 0.05891, eit: true, noSMT: true},
	{name: "x2gd", arch: "arm64", cpu: "AWS", clockGHz: 2.5, hypervisor: "nitro", gibPerVCPU: 16, sizes: sizesG, disks: "1x59 1x118 1x237 1x475 1x950 1x1900 2x1425 2x1900 2x1900", net: netGraviton2, ebs: ebsG2, rate: 0.0835, noSMT: true},
	{name: "x2iedn", arch: "x86_64", cpu: "Intel", clockGHz: 3.5, hypervisor: "nitro", gibPerVCPU: 32, sizes: "xlarge 2xlarge 4xlarge 8xlarge 16xlarge 24xlarge 32xlarge metal", disks: "1x118 1x237 1x475 1x950 1x1900 2x1425 2x1900 2x1900", efa: "0 0 0 0 0 0 1 1", net: netX2, ebs: ebsX2, rate: 0.20841, eit: true},
	{name: "x2idn", arch: "x86_64", cpu: "Intel", clockGHz: 3.5, hypervisor: "nitro", gibPerVCPU: 16, sizes: "16xlarge 24xlarge 32xlarge metal", disks: "1x1900 2x1425 2x1900 2x1900", efa: "0 0 1 1", net: netX2, ebs: ebs{40000, 80000, 128}, rate: 0.1042, eit: true},

	// Burstable.
	{name: "t2", arch: "x86_64", cpu: "Intel", clockGHz: 2.5, hypervisor: "xen", sizes: sizesT, vcpus: "1 1 1 2 2 4 8", memGiB: memT, enis: "2/2 2/2 3/4 3/6 3/12 3/15 3/15", net: netT2, prices: "0.0058 0.0116 0.023 0.0464 0.0928 0.1856 0.3712", burstable: true},
	{name: "t3", arch: "x86_64", cpu: "Intel", clockGHz: 2.5, hypervisor: "nitro", sizes: sizesT, vcpus: vcpusT, memGiB: memT, enis: enisT3, net: netT, ebs: ebsT3, prices: "0.0052 0.0104 0.0208 0.0416 0.0832 0.1664 0.3328", burstable: true},
	{name: "t3a", arch: "x86_64", cpu: "AMD", clockGHz: 2.2, hypervisor: "nitro", sizes: sizesT, vcpus: vcpusT, memGiB: memT, enis: "2/2 2/2 2/4 3/6 3/12 4/15 4/15", net: netT, ebs: ebsT3, prices: "0.0047 0.0094 0.0188 0.0376 0.0752 0.1504 0.3008", burstable: true},
	{name: "t4g", arch: "arm64", cpu: "AWS", clockGHz: 2.5, hypervisor: "nitro", sizes: sizesT, vcpus: vcpusT, memGiB: memT, enis: enisT3, net: netT, ebs: ebsT3, prices: "0.0042 0.0084 0.0168 0.0336 0.0672 0.1344 0.2688", burstable: true, noSMT: true},

	// Storage optimized.
	{name: "i3", arch: "x86_64", cpu: "Intel", clockGHz: 2.3, hypervisor: "xen", sizes: "large xlarge 2xlarge 4xlarge 8xlarge 16xlarge metal", vcpus: "2 4 8 16 32 64 72", memGiB: "15.25 30.5 61 122 244 488 512", disks: "1x475 1x950 1x1900 2x1900 4x1900 8x1900 8x1900", net: net5, ebs: ebsI3, prices: "0.156 0.312 0.624 1.248 2.496 4.992 4.992"},
	{name: "i3en", arch: "x86_64", cpu: "Intel", clockGHz: 3.1, hypervisor: "nitro", gibPerVCPU: 8, sizes: "large xlarge 2xlarge 3xlarge 6xlarge 12xlarge 24xlarge metal", disks: "1x1250 1x2500 2x2500 1x7500 2x7500 4x7500 8x7500 8x7500", efa: "0 0 0 0 0 1 1 1", net: netI3en, ebs: ebs5, rate: 0.113, eit: true},
	{name: "i4i", arch: "x86_64", cpu: "Intel", clockGHz: 3.5, hypervisor: "nitro", gibPerVCPU: 8, sizes: "large xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge 24xlarge 32xlarge metal", disks: "1x468 1x937 1x1875 1x3750 2x3750 3x3750 4x3750 6x3750 8x3750 8x3750", efa: efa6i, net: netI4i, ebs: ebs6i, rate: 0.086, eit: true},
	{name: "i4g", arch: "arm64", cpu: "AWS", clockGHz: 2.5, hypervisor: "nitro", gibPerVCPU: 8, sizes: "large xlarge 2xlarge 4xlarge 8xlarge 16xlarge", disks: "1x468 1x937 1x1875 1x3750 2x3750 4x3750", efa: "0 0 0 0 0 1", net: netI4g, ebs: ebsG3, rate: 0.07722, eit: true, noSMT: true},
	{name: "d3", arch: "x86_64", cpu: "Intel", clockGHz: 3.1, hypervisor: "nitro", gibPerVCPU: 8, sizes: "xlarge 2xlarge 4xlarge 8xlarge", disks: "3x1980 6x1980 12x1980 24x1980", diskType: "hdd", enis: "4/3 4/5 4/10 3/20", net: netD3, ebs: ebsD3, rate: 0.12475, eit: true},

	// Accelerated computing.
	{name: "g4dn", arch: "x86_64", cpu: "Intel", clockGHz: 2.5, hypervisor: "nitro", sizes: "xlarge 2xlarge 4xlarge 8xlarge 12xlarge 16xlarge metal", memGiB: "16 32 64 128 192 256 384", gpu: gpuT4, gpus: "1 1 1 1 4 1 8", disks: "1x125 1x225 1x225 1x900 1x900 1x900 2x900", enis: "3/10 3/10 3/10 4/15 8/30 4/15 15/50", efa: "0 0 0 1 1 1 1", net: netG4dn, ebs: ebsG4dn, prices: "0.526 0.752 1.204 2.176 3.912 4.352 7.824", eit: true},
	{name: "g4ad", arch: "x86_64", cpu: "AMD", clockGHz: 3.3, hypervisor: "nitro", sizes: "xlarge 2xlarge 4xlarge 8xlarge 16xlarge", memGiB: "16 32 64 128 256", gpu: gpuV520, gpus: "1 1 1 2 4", disks: "1x150 1x300 1x600 1x1200 1x2400", enis: "2/4 2/4 3/10 4/15 8/30", net: netG4ad, ebs: ebsG4ad, prices: "0.37853 0.54117 0.867 1.734 3.468", eit: true},
	{name: "g5", arch: "x86_64", cpu: "AMD", clockGHz: 3.3, hypervisor: "nitro", gibPerVCPU: 4, sizes: gpuSizesG56, gpu: gpuA10G, gpus: "1 1 1 1 4 1 4 8", disks: "1x250 1x450 1x600 1x900 1x3800 1x1900 1x3800 2x3800", enis: "4/15 4/15 8/30 8/30 15/50 8/30 15/50 7/50", efa: "0 0 0 1 1 1 1 1", net: netG5, ebs: ebsG5, prices: "1.006 1.212 1.624 2.448 5.672 4.096 8.144 16.288", eit: true},
	{name: "g6", arch: "x86_64", cpu: "AMD", clockGHz: 3.3, hypervisor: "nitro", gibPerVCPU: 4, sizes: gpuSizesG56, gpu: gpuL4, gpus: "1 1 1 1 4 1 4 8", disks: "1x250 1x450 1x600 2x450 4x940 2x940 4x940 8x940", efa: "0 0 0 1 1 1 1 1", net: netG5, ebs: ebsG6, prices: "0.8048 0.9776 1.3232 2.0144 4.6016 3.3968 6.6752 13.3504", eit: true},
	{name: "p3", arch: "x86_64", cpu: "Intel", clockGHz: 2.3, hypervisor: "xen", sizes: "2xlarge 8xlarge 16xlarge", memGiB: "61 244 488", gpu: gpuV100, gpus: "1 4 8", enis: "4/15 8/30 8/30", net: netP3, ebs: ebsP3, prices: "3.06 12.24 24.48"},
	{name: "p3dn", arch: "x86_64", cpu: "Intel", clockGHz: 2.5, hypervisor: "nitro", sizes: "24xlarge", memGiB: "768", gpu: gpuV100DN, gpus: "8", disks: "2x900", enis: "15/50", efa: "1", net: netP3dn, ebs: ebsP, prices: "31.212", eit: true},
	{name: "p4d", arch: "x86_64", cpu: "Intel", clockGHz: 3.0, hypervisor: "nitro", sizes: "24xlarge", memGiB: "1152", gpu: gpuA100, gpus: "8", disks: "8x1000", enis: "60/50", cards: "4", efa: "4", net: netP4d, ebs: ebsP, prices: "32.7726", eit: true},
	{name: "p5", arch: "x86_64", cpu: "AMD", clockGHz: 3.6, hypervisor: "nitro", sizes: "48xlarge", memGiB: "2048", gpu: gpuH100, gpus: "8", disks: "8x3800", enis: "64/50", cards: "32", efa: "32", net: netP5, ebs: ebsP5, prices: "55.04", eit: true},
	{name: "inf2", arch: "x86_64", cpu: "AMD", clockGHz: 3.6, hypervisor: "nitro", sizes: "xlarge 8xlarge 24xlarge 48xlarge", memGiB: "16 128 384 768", neuron: inferent2, neurons: "1 1 6 12", enis: "4/15 4/15 15/50 15/50", net: netInf2, ebs: ebsInf2, prices: "0.75817 1.96786 6.49063 12.98127", eit: true},
	{name: "trn1", arch: "x86_64", cpu: "Intel", clockGHz: 3.5, hypervisor: "nitro", sizes: "2xlarge 32xlarge", memGiB: "32 512", neuron: trainium, neurons: "1 16", disks: "1x474 4x1900", enis: "4/15 40/50", cards: "1 8", efa: "0 8", net: netTrn1, ebs: ebsTrn1, prices: "1.34375 21.5", eit: true},
}
