package catalogdata

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// InstanceType is one instance type's published facts, in EC2's own terms (architectures
// x86_64/arm64, manufacturers as DescribeInstanceTypes reports them).
type InstanceType struct {
	Name       string
	Family     string
	Size       string
	Generation int
	Arch       string
	// Hypervisor is nitro or xen, and empty for bare metal.
	Hypervisor        string
	BareMetal         bool
	Burstable         bool
	CurrentGeneration bool
	Flex              bool

	VCPUs          int32
	Cores          int32
	ThreadsPerCore int32
	MemoryMiB      int64
	CPU            string
	ClockGHz       float64

	NetworkPerformance   string
	BaselineGbps         float64
	PeakGbps             float64
	NetworkCards         int32
	MaxENIs              int32
	IPv4PerENI           int32
	IPv6PerENI           int32
	EncryptionInTransit  bool
	MaxEFAInterfaces     int32
	EBSBaselineMbps      int32
	EBSMaximumMbps       int32
	InstanceStoreDisks   int32
	InstanceStoreDiskGB  int64
	InstanceStoreType    string // ssd or hdd
	InstanceStoreTotalGB int64

	GPU    *Accelerator
	Neuron *Accelerator

	UsageClasses []string
	// OnDemandUSD is the us-east-1 / us-west-2 Linux on-demand price per hour.
	OnDemandUSD float64
}

// Accelerator is a set of identical GPUs or Neuron devices.
type Accelerator struct {
	Name         string
	Manufacturer string
	Count        int32
	MemoryMiB    int32 // per device
	Cores        int32 // Neuron cores per device
}

var (
	loadOnce sync.Once
	all      []InstanceType
	byName   map[string]int
)

// All returns every instance type of the catalog, sorted by name. The slice is shared; do not
// modify it.
func All() []InstanceType {
	load()
	return all
}

// Lookup returns the facts of the named type.
func Lookup(name string) (InstanceType, bool) {
	load()
	i, ok := byName[name]
	if !ok {
		return InstanceType{}, false
	}
	return all[i], true
}

func load() {
	loadOnce.Do(func() {
		byName = map[string]int{}
		for _, f := range families {
			types, err := f.expand()
			if err != nil {
				panic(fmt.Sprintf("catalogdata: family %s: %v", f.name, err))
			}
			all = append(all, types...)
		}
		sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
		for i, it := range all {
			if _, dup := byName[it.Name]; dup {
				panic("catalogdata: duplicate instance type " + it.Name)
			}
			byName[it.Name] = i
		}
	})
}

// sizeVCPUs maps size names to their vCPUs for families with two vCPUs per large.
var sizeVCPUs = map[string]int32{
	"medium": 1, "large": 2, "xlarge": 4, "2xlarge": 8, "3xlarge": 12, "4xlarge": 16, "6xlarge": 24,
	"8xlarge": 32, "9xlarge": 36, "12xlarge": 48, "16xlarge": 64, "18xlarge": 72, "24xlarge": 96,
	"32xlarge": 128, "48xlarge": 192, "metal-24xl": 96, "metal-48xl": 192,
}

var familyName = regexp.MustCompile(`^([a-z]+)([0-9]+)`)

func (f family) expand() ([]InstanceType, error) {
	sizes := strings.Fields(f.sizes)
	lists := map[string][]string{}
	for name, raw := range map[string]string{
		"vcpus": f.vcpus, "memGiB": f.memGiB, "enis": f.enis, "cards": f.cards, "disks": f.disks,
		"gpus": f.gpus, "neurons": f.neurons, "efa": f.efa, "prices": f.prices,
	} {
		if raw == "" {
			continue
		}
		values := strings.Fields(raw)
		if len(values) != len(sizes) {
			return nil, fmt.Errorf("%s has %d values for %d sizes", name, len(values), len(sizes))
		}
		lists[name] = values
	}
	m := familyName.FindStringSubmatch(f.name)
	if m == nil {
		return nil, fmt.Errorf("name does not start with category and generation")
	}
	generation, _ := strconv.Atoi(m[2])

	var largest int32
	for _, s := range sizes {
		largest = max(largest, sizeVCPUs[s])
	}
	out := make([]InstanceType, 0, len(sizes))
	for i, size := range sizes {
		at := func(list string) (string, bool) {
			values, ok := lists[list]
			if !ok {
				return "", false
			}
			return values[i], true
		}
		it := InstanceType{
			Name: f.name + "." + size, Family: f.name, Size: size, Generation: generation,
			Arch: f.arch, Hypervisor: f.hypervisor, Burstable: f.burstable, Flex: f.flex,
			CurrentGeneration: true, CPU: f.cpu, ClockGHz: f.clockGHz,
			EncryptionInTransit: f.eit, InstanceStoreType: "ssd",
			UsageClasses: []string{"on-demand", "spot"},
		}
		it.BareMetal = strings.HasPrefix(size, "metal")
		if it.BareMetal {
			it.Hypervisor = ""
		}
		it.VCPUs = sizeVCPUs[size]
		if size == "metal" {
			it.VCPUs = largest
		}
		if v, ok := at("vcpus"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, fmt.Errorf("%s: vcpus %q: %w", it.Name, v, err)
			}
			it.VCPUs = int32(n)
		}
		if it.VCPUs == 0 {
			return nil, fmt.Errorf("%s: unknown vCPUs", it.Name)
		}
		it.ThreadsPerCore = 2
		if f.noSMT || it.VCPUs == 1 {
			it.ThreadsPerCore = 1
		}
		it.Cores = it.VCPUs / it.ThreadsPerCore

		memGiB := f.gibPerVCPU * float64(it.VCPUs)
		if v, ok := at("memGiB"); ok {
			g, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: memGiB %q: %w", it.Name, v, err)
			}
			memGiB = g
		}
		it.MemoryMiB = int64(math.Round(memGiB * 1024))
		if it.MemoryMiB == 0 {
			return nil, fmt.Errorf("%s: no memory", it.Name)
		}

		it.MaxENIs, it.IPv4PerENI = defaultENIs(it.VCPUs)
		if v, ok := at("enis"); ok {
			if _, err := fmt.Sscanf(v, "%d/%d", &it.MaxENIs, &it.IPv4PerENI); err != nil {
				return nil, fmt.Errorf("%s: enis %q: %w", it.Name, v, err)
			}
		}
		it.IPv6PerENI = it.IPv4PerENI
		it.NetworkCards = 1
		if v, ok := at("cards"); ok {
			n, _ := strconv.Atoi(v)
			it.NetworkCards = int32(n)
		}
		it.BaselineGbps, it.PeakGbps, it.NetworkPerformance = f.net.bandwidth(size, it.VCPUs)
		it.EBSBaselineMbps, it.EBSMaximumMbps = f.ebs.bandwidth(it.VCPUs)

		if v, ok := at("disks"); ok && v != "-" {
			if _, err := fmt.Sscanf(v, "%dx%d", &it.InstanceStoreDisks, &it.InstanceStoreDiskGB); err != nil {
				return nil, fmt.Errorf("%s: disks %q: %w", it.Name, v, err)
			}
			it.InstanceStoreTotalGB = int64(it.InstanceStoreDisks) * it.InstanceStoreDiskGB
			if f.diskType != "" {
				it.InstanceStoreType = f.diskType
			}
		}
		if v, ok := at("efa"); ok {
			n, _ := strconv.Atoi(v)
			it.MaxEFAInterfaces = int32(n)
		}
		if v, ok := at("gpus"); ok && f.gpu != nil {
			n, _ := strconv.Atoi(v)
			it.GPU = &Accelerator{Name: f.gpu.name, Manufacturer: f.gpu.manufacturer, Count: int32(n), MemoryMiB: f.gpu.memMiB}
		}
		if v, ok := at("neurons"); ok && f.neuron != nil {
			n, _ := strconv.Atoi(v)
			it.Neuron = &Accelerator{Name: f.neuron.name, Manufacturer: f.neuron.manufacturer, Count: int32(n), MemoryMiB: f.neuron.memMiB, Cores: f.neuron.cores}
		}
		it.OnDemandUSD = roundPrice(f.rate * float64(it.VCPUs))
		if v, ok := at("prices"); ok {
			p, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: price %q: %w", it.Name, v, err)
			}
			it.OnDemandUSD = p
		}
		if it.OnDemandUSD <= 0 {
			return nil, fmt.Errorf("%s: no on-demand price", it.Name)
		}
		out = append(out, it)
	}
	return out, nil
}

// defaultENIs is the network-interface limit of Nitro instance types by vCPUs: most families
// share it (m5.large 3×10, m5.xlarge 4×15, m5.4xlarge 8×30, m5.16xlarge 15×50).
func defaultENIs(vcpus int32) (enis, ipv4 int32) {
	switch {
	case vcpus <= 1:
		return 2, 4
	case vcpus == 2:
		return 3, 10
	case vcpus <= 12:
		return 4, 15
	case vcpus <= 48:
		return 8, 30
	default:
		return 15, 50
	}
}

func (n network) bandwidth(size string, vcpus int32) (baseline, peak float64, performance string) {
	if v, ok := n.table[size]; ok {
		baseline = v
	} else if v, ok := n.table[strings.SplitN(size, "-", 2)[0]]; ok {
		baseline = v
	} else {
		baseline = math.Min(n.maxGbps, n.perVCPU*float64(vcpus))
	}
	baseline = math.Round(baseline*1000) / 1000
	peak = baseline
	switch {
	case n.performance != "":
		performance = n.performance
	case vcpus < 32 && n.upTo != "":
		performance = "Up to " + n.upTo + " Gigabit"
		if up, err := strconv.ParseFloat(n.upTo, 64); err == nil && up > peak {
			peak = up
		}
	default:
		performance = strconv.FormatFloat(baseline, 'f', -1, 64) + " Gigabit"
	}
	return baseline, peak, performance
}

func (e ebs) bandwidth(vcpus int32) (baseline, maximum int32) {
	if e.maxMbps == 0 {
		return 0, 0
	}
	proportional := int32(math.Round(float64(e.maxMbps) * math.Min(1, float64(vcpus)/float64(e.atVCPUs))))
	return proportional, max(e.burstMbps, proportional)
}

func roundPrice(p float64) float64 { return math.Round(p*1e5) / 1e5 }
