// Command gen writes the kwok provider's default instance type catalog: EC2-like types of the
// c, m, r, t, i, g, p, inf and trn families, Intel, AMD and Graviton, in four zones with spot and
// on-demand offerings. Prices are modelled on EC2's us-east-1 list prices per vCPU; spot prices
// are 30-40 % of on-demand, varying deterministically by type and zone so that zones differ. The
// AMD GPU (g4ad) and Neuron (inf2, trn1) types are taken as they are from the AWS provider's
// instance-type facts (cloudprovider/aws/catalogdata), and so is the baseline network bandwidth
// of every type EC2 has. Every type but the burstable ones advertises the
// vpc.amazonaws.com/pod-eni branch interfaces the VPC resource controller gives its size.
//
//	go run ./gen -o catalog.json
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"strconv"
	"strings"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider/aws/catalogdata"
	"github.com/joinery-dev/joinery/cloudprovider/aws/instancetype"
	"github.com/joinery-dev/joinery/cloudprovider/kwok/catalog"
)

// Zones of the generated catalog: the names Karpenter's kwok provider uses.
var Zones = []string{"test-zone-a", "test-zone-b", "test-zone-c", "test-zone-d"}

// size is an EC2 size suffix with its vCPUs and ENI-limited pod density.
type size struct {
	name string
	cpu  int64
	pods int64
}

var (
	large    = size{"large", 2, 29}
	xlarge   = size{"xlarge", 4, 58}
	x2large  = size{"2xlarge", 8, 58}
	x4large  = size{"4xlarge", 16, 234}
	x8large  = size{"8xlarge", 32, 234}
	x12large = size{"12xlarge", 48, 234}
	x16large = size{"16xlarge", 64, 737}
	x24large = size{"24xlarge", 96, 737}
	x48large = size{"48xlarge", 192, 737}

	generalSizes = []size{large, xlarge, x2large, x4large, x8large, x12large, x16large}
)

// family is a general-purpose family: memory and price scale with vCPUs.
type family struct {
	name, category string
	generation     int
	arch, cpuMaker string
	memPerCPUGiB   float64
	pricePerCPU    float64
	nvmePerCPUGB   int64 // local NVMe instance storage, 0 for none
}

var families = []family{
	{"c5", "c", 5, "amd64", "intel", 2, 0.0425, 0}, {"c5a", "c", 5, "amd64", "amd", 2, 0.0385, 0},
	{"m5", "m", 5, "amd64", "intel", 4, 0.048, 0}, {"m5a", "m", 5, "amd64", "amd", 4, 0.043, 0},
	{"r5", "r", 5, "amd64", "intel", 8, 0.063, 0}, {"r5a", "r", 5, "amd64", "amd", 8, 0.0565, 0},
	{"c6i", "c", 6, "amd64", "intel", 2, 0.0425, 0}, {"c6a", "c", 6, "amd64", "amd", 2, 0.0383, 0}, {"c6g", "c", 6, "arm64", "aws", 2, 0.034, 0},
	{"m6i", "m", 6, "amd64", "intel", 4, 0.048, 0}, {"m6a", "m", 6, "amd64", "amd", 4, 0.0432, 0}, {"m6g", "m", 6, "arm64", "aws", 4, 0.0385, 0},
	{"r6i", "r", 6, "amd64", "intel", 8, 0.063, 0}, {"r6a", "r", 6, "amd64", "amd", 8, 0.0567, 0}, {"r6g", "r", 6, "arm64", "aws", 8, 0.0504, 0},
	{"c7i", "c", 7, "amd64", "intel", 2, 0.0446, 0}, {"c7a", "c", 7, "amd64", "amd", 2, 0.0513, 0}, {"c7g", "c", 7, "arm64", "aws", 2, 0.0363, 0},
	{"m7i", "m", 7, "amd64", "intel", 4, 0.0504, 0}, {"m7a", "m", 7, "amd64", "amd", 4, 0.058, 0}, {"m7g", "m", 7, "arm64", "aws", 4, 0.0408, 0},
	{"r7i", "r", 7, "amd64", "intel", 8, 0.0662, 0}, {"r7a", "r", 7, "amd64", "amd", 8, 0.0761, 0}, {"r7g", "r", 7, "arm64", "aws", 8, 0.0536, 0},
	{"i4i", "i", 4, "amd64", "intel", 8, 0.0858, 234}, {"i4g", "i", 4, "arm64", "aws", 8, 0.0772, 234},
}

// burstable is a t-family size: fixed shape and price.
type burstable struct {
	size      string
	cpu, pods int64
	memoryMiB int64
	price     float64 // of t3; t3a and t4g are discounted
}

var burstableSizes = []burstable{
	{"nano", 2, 4, 512, 0.0052}, {"micro", 2, 4, 1024, 0.0104}, {"small", 2, 11, 2048, 0.0208},
	{"medium", 2, 17, 4096, 0.0416}, {"large", 2, 35, 8192, 0.0832}, {"xlarge", 4, 58, 16384, 0.1664},
	{"2xlarge", 8, 58, 32768, 0.3328},
}

var burstableFamilies = []struct {
	name           string
	generation     int
	arch, cpuMaker string
	priceFactor    float64
}{
	{"t3", 3, "amd64", "intel", 1}, {"t3a", 3, "amd64", "amd", 0.9}, {"t4g", 4, "arm64", "aws", 0.8},
}

// accelerated is a GPU type, listed one by one since GPU counts do not scale with size.
type accelerated struct {
	family, category string
	generation       int
	arch, cpuMaker   string
	size             size
	memoryGiB        int64
	gpuName          string
	gpuCount         int64
	gpuMemoryMiB     int64
	price            float64
}

var acceleratedTypes = func() []accelerated {
	var out []accelerated
	add := func(family, category string, generation int, arch, cpuMaker, gpuName string, gpuMemoryMiB int64, shapes []accelerated) {
		for _, s := range shapes {
			s.family, s.category, s.generation, s.arch, s.cpuMaker, s.gpuName, s.gpuMemoryMiB = family, category, generation, arch, cpuMaker, gpuName, gpuMemoryMiB
			out = append(out, s)
		}
	}
	add("g5", "g", 5, "amd64", "amd", "a10g", 24576, []accelerated{
		{size: xlarge, memoryGiB: 16, gpuCount: 1, price: 1.006}, {size: x2large, memoryGiB: 32, gpuCount: 1, price: 1.212},
		{size: x4large, memoryGiB: 64, gpuCount: 1, price: 1.624}, {size: x8large, memoryGiB: 128, gpuCount: 1, price: 2.448},
		{size: x12large, memoryGiB: 192, gpuCount: 4, price: 5.672}, {size: x16large, memoryGiB: 256, gpuCount: 1, price: 4.096},
	})
	add("g6", "g", 6, "amd64", "amd", "l4", 22888, []accelerated{
		{size: xlarge, memoryGiB: 16, gpuCount: 1, price: 0.8048}, {size: x2large, memoryGiB: 32, gpuCount: 1, price: 0.9776},
		{size: x4large, memoryGiB: 64, gpuCount: 1, price: 1.3232}, {size: x8large, memoryGiB: 128, gpuCount: 1, price: 2.0144},
		{size: x12large, memoryGiB: 192, gpuCount: 4, price: 4.6016}, {size: x16large, memoryGiB: 256, gpuCount: 1, price: 3.3968},
	})
	add("g5g", "g", 5, "arm64", "aws", "t4g", 16384, []accelerated{
		{size: xlarge, memoryGiB: 8, gpuCount: 1, price: 0.42}, {size: x2large, memoryGiB: 16, gpuCount: 1, price: 0.556},
		{size: x4large, memoryGiB: 32, gpuCount: 1, price: 0.828}, {size: x8large, memoryGiB: 64, gpuCount: 1, price: 1.372},
		{size: x16large, memoryGiB: 128, gpuCount: 2, price: 2.744},
	})
	add("p4d", "p", 4, "amd64", "intel", "a100", 40960, []accelerated{{size: x24large, memoryGiB: 1152, gpuCount: 8, price: 32.7726}})
	add("p5", "p", 5, "amd64", "amd", "h100", 81920, []accelerated{{size: x48large, memoryGiB: 2048, gpuCount: 8, price: 98.32}})
	return out
}()

// ec2Types are the accelerated catalogdata types the catalog carries as EC2 has them: AMD GPU
// and Neuron types on one network card, whose ENI-limited pod density follows from their
// interfaces alone.
var ec2Types = []string{
	"g4ad.xlarge", "g4ad.2xlarge", "g4ad.4xlarge", "g4ad.8xlarge", "g4ad.16xlarge",
	"inf2.xlarge", "inf2.8xlarge", "inf2.24xlarge", "inf2.48xlarge", "trn1.2xlarge",
}

// Generate returns the catalog.
func Generate() catalog.File {
	var f catalog.File
	for _, fam := range families {
		for _, s := range generalSizes {
			labels := commonLabels(fam.category, fam.name, fam.generation, s.name, fam.cpuMaker)
			if fam.nvmePerCPUGB > 0 {
				labels[awsv1.LabelInstanceLocalNVME] = strconv.FormatInt(fam.nvmePerCPUGB*s.cpu, 10)
			}
			it := instanceType(fam.name+"."+s.name, fam.arch, s.cpu, int64(fam.memPerCPUGiB*1024)*s.cpu, s.pods,
				price(fam.pricePerCPU*float64(s.cpu)), nil, labels)
			it.PodENI = instancetype.BranchInterfaces(s.name)
			f.InstanceTypes = append(f.InstanceTypes, it)
		}
	}
	for _, fam := range burstableFamilies {
		for _, s := range burstableSizes {
			labels := commonLabels("t", fam.name, fam.generation, s.size, fam.cpuMaker)
			f.InstanceTypes = append(f.InstanceTypes, instanceType(fam.name+"."+s.size, fam.arch, s.cpu, s.memoryMiB, s.pods,
				price(s.price*fam.priceFactor), nil, labels))
		}
	}
	for _, a := range acceleratedTypes {
		gpu := &catalog.GPU{Name: a.gpuName, Manufacturer: "nvidia", Count: a.gpuCount, MemoryMiB: a.gpuMemoryMiB, ResourceName: "nvidia.com/gpu"}
		it := instanceType(a.family+"."+a.size.name, a.arch, a.size.cpu, a.memoryGiB*1024, a.size.pods,
			a.price, gpu, commonLabels(a.category, a.family, a.generation, a.size.name, a.cpuMaker))
		it.PodENI = instancetype.BranchInterfaces(a.size.name)
		f.InstanceTypes = append(f.InstanceTypes, it)
	}
	for _, name := range ec2Types {
		f.InstanceTypes = append(f.InstanceTypes, ec2Type(name))
	}
	for i := range f.InstanceTypes {
		addNetworkBandwidth(&f.InstanceTypes[i])
		addInstanceStore(&f.InstanceTypes[i])
	}
	return f
}

// addNetworkBandwidth labels it with the baseline network bandwidth in megabits that EC2
// publishes for the type of its name and shape (as the AWS provider derives the label); a type
// EC2 does not have (say c5.8xlarge) gets none.
func addNetworkBandwidth(it *catalog.InstanceType) {
	d, ok := catalogdata.Lookup(it.Name)
	if !ok || int64(d.VCPUs) != it.CPU || d.MemoryMiB != it.MemoryMiB || d.BaselineGbps <= 0 {
		return
	}
	it.Labels[awsv1.LabelInstanceNetworkBandwidth] = strconv.FormatInt(int64(d.BaselineGbps*1000+0.5), 10)
}

// addInstanceStore gives it the NVMe instance store volumes EC2 publishes for the type of its
// name (on Nitro; Xen types' instance store is not NVMe), which take EBS attachment slots.
func addInstanceStore(it *catalog.InstanceType) {
	if d, ok := catalogdata.Lookup(it.Name); ok && d.Hypervisor != "xen" {
		it.NVMeInstanceStore = d.InstanceStoreDisks
	}
}

// ec2Type is the named accelerated type from catalogdata, Linux only as the catalog's other
// accelerated types (and the Neuron SDK) are.
func ec2Type(name string) catalog.InstanceType {
	d, ok := catalogdata.Lookup(name)
	if !ok || (d.Neuron == nil && (d.GPU == nil || d.GPU.Manufacturer != "AMD")) || d.NetworkCards > 1 || d.Arch != "x86_64" {
		panic(fmt.Sprintf("%s is not a single-card x86_64 Neuron or AMD GPU type of catalogdata", name))
	}
	category, _, _ := strings.Cut(d.Family, strconv.Itoa(d.Generation))
	labels := commonLabels(category, d.Family, d.Generation, d.Size, strings.ToLower(d.CPU))
	if d.InstanceStoreTotalGB > 0 {
		labels[awsv1.LabelInstanceLocalNVME] = strconv.FormatInt(d.InstanceStoreTotalGB, 10)
	}
	pods := int64(d.MaxENIs)*int64(d.IPv4PerENI-1) + 2
	it := instanceType(name, "amd64", int64(d.VCPUs), d.MemoryMiB, pods, price(d.OnDemandUSD), nil, labels)
	it.OperatingSystems = []string{"linux"}
	if g := d.GPU; g != nil {
		it.GPU = &catalog.GPU{Name: strings.ToLower(strings.ReplaceAll(g.Name, " ", "-")), Manufacturer: "amd", Count: int64(g.Count),
			MemoryMiB: int64(g.MemoryMiB), ResourceName: "amd.com/gpu"}
	}
	if n := d.Neuron; n != nil {
		it.Neuron = &catalog.Neuron{Name: strings.ToLower(n.Name), Count: int64(n.Count), Cores: int64(n.Cores)}
	}
	it.PodENI = instancetype.BranchInterfaces(d.Size)
	return it
}

func commonLabels(category, family string, generation int, size, cpuMaker string) map[string]string {
	return map[string]string{
		awsv1.LabelInstanceCategory:        category,
		awsv1.LabelInstanceFamily:          family,
		awsv1.LabelInstanceGeneration:      strconv.Itoa(generation),
		awsv1.LabelInstanceSize:            size,
		awsv1.LabelInstanceCPUManufacturer: cpuMaker,
		awsv1.LabelInstanceHypervisor:      "nitro",
	}
}

// instanceType assembles a type: Windows is offered on amd64 types without GPUs, as on EC2 the
// common Windows AMIs are x86 only.
func instanceType(name, arch string, cpu, memoryMiB, pods int64, onDemand float64, gpu *catalog.GPU, labels map[string]string) catalog.InstanceType {
	oses := []string{"linux"}
	if arch == "amd64" && gpu == nil {
		oses = append(oses, "windows")
	}
	it := catalog.InstanceType{Name: name, Arch: arch, OperatingSystems: oses, CPU: cpu, MemoryMiB: memoryMiB, Pods: pods, GPU: gpu, Labels: labels}
	for _, zone := range Zones {
		it.Offerings = append(it.Offerings,
			catalog.Offering{Zone: zone, CapacityType: karpv1.CapacityTypeSpot, Price: price(onDemand * spotFactor(name, zone))},
			catalog.Offering{Zone: zone, CapacityType: karpv1.CapacityTypeOnDemand, Price: onDemand},
		)
	}
	return it
}

// spotFactor is the spot discount of name in zone, between 0.30 and 0.40, from a hash so that it
// is stable across runs.
func spotFactor(name, zone string) float64 {
	h := fnv.New32a()
	h.Write([]byte(name + "/" + zone))
	return 0.30 + 0.10*float64(h.Sum32()%1001)/1000
}

// price rounds to a hundredth of a cent, as EC2 lists prices.
func price(p float64) float64 {
	return math.Round(p*10000) / 10000
}

// Encode writes the catalog with one instance type per line, so that diffs stay readable.
func Encode(f catalog.File) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString("{\"instanceTypes\": [\n")
	for i, it := range f.InstanceTypes {
		line, err := json.Marshal(it)
		if err != nil {
			return nil, fmt.Errorf("encoding %s: %w", it.Name, err)
		}
		buf.Write(line)
		if i < len(f.InstanceTypes)-1 {
			buf.WriteByte(',')
		}
		buf.WriteByte('\n')
	}
	buf.WriteString("]}\n")
	return buf.Bytes(), nil
}

func main() {
	out := flag.String("o", "catalog.json", "file to write")
	flag.Parse()
	data, err := Encode(Generate())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
