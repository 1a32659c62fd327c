package provisioning

import (
	"fmt"
	"math"
	"testing"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/kwok/catalog"
)

// The test catalog: 66 instance types in three zones, few enough to reason about exactly and
// more than the 60 a NodeClaim lists. Prices grow with size within a family, so a family's
// types are cheapest first in size order; spot costs 35 % of on-demand times a zone factor
// (test-zone-b cheapest). m5.xlarge also has one reserved slot in test-zone-c.
var (
	zones         = []string{"test-zone-a", "test-zone-b", "test-zone-c"}
	spotZoneRatio = map[string]float64{"test-zone-a": 1.0, "test-zone-b": 0.9, "test-zone-c": 1.1}
	sizes         = []struct {
		name string
		cpu  int64
	}{{"large", 2}, {"xlarge", 4}, {"2xlarge", 8}, {"4xlarge", 16}, {"8xlarge", 32}, {"12xlarge", 48}, {"16xlarge", 64}}
	families = []struct {
		name, category, generation, arch string
		gibPerCPU                        int64
		pricePerCPU                      float64
	}{
		{"c5", "c", "5", "amd64", 2, 0.0425},
		{"m5", "m", "5", "amd64", 4, 0.048},
		{"r5", "r", "5", "amd64", 8, 0.063},
		{"c6g", "c", "6", "arm64", 2, 0.034},
		{"m6g", "m", "6", "arm64", 4, 0.0385},
		{"r6g", "r", "6", "arm64", 8, 0.0504},
		{"c7a", "c", "7", "amd64", 2, 0.05125},
		{"m7a", "m", "7", "amd64", 4, 0.05796},
		{"r7a", "r", "7", "amd64", 8, 0.07608},
	}
	burstable = []struct {
		name      string
		memoryMiB int64
		pods      int64
		price     float64
	}{{"t3.micro", 1024, 4, 0.0104}, {"t3.small", 2048, 11, 0.0208}, {"t3.medium", 4096, 17, 0.0416}}
)

const (
	reservedType   = "m5.xlarge"
	reservedZone   = "test-zone-c"
	reservationID  = "cr-m5-xlarge"
	reservedPrice  = 0.00001
	familyLabel    = "karpenter.k8s.aws/instance-family"
	sizeLabel      = "karpenter.k8s.aws/instance-size"
	categoryLabel  = "karpenter.k8s.aws/instance-category"
	generationLbl  = "karpenter.k8s.aws/instance-generation"
	numberOfTypes  = 66
	numberOfFamily = 10
)

func testCatalog() *catalog.File {
	f := &catalog.File{}
	for _, fam := range families {
		for _, size := range sizes {
			name := fam.name + "." + size.name
			pods := int64(110)
			switch size.cpu {
			case 2:
				pods = 29
			case 4:
				pods = 58
			}
			it := catalog.InstanceType{
				Name: name, Arch: fam.arch, OperatingSystems: []string{"linux"},
				CPU: size.cpu, MemoryMiB: size.cpu * fam.gibPerCPU * 1024, Pods: pods,
				Labels: map[string]string{
					familyLabel: fam.name, sizeLabel: size.name, categoryLabel: fam.category, generationLbl: fam.generation,
				},
				Offerings: offerings(round(float64(size.cpu) * fam.pricePerCPU)),
			}
			if name == reservedType {
				it.Offerings = append(it.Offerings, catalog.Offering{
					Zone: reservedZone, CapacityType: karpv1.CapacityTypeReserved, Price: reservedPrice,
					ReservationID: reservationID, ReservationCapacity: 1,
				})
			}
			f.InstanceTypes = append(f.InstanceTypes, it)
		}
	}
	for _, b := range burstable {
		f.InstanceTypes = append(f.InstanceTypes, catalog.InstanceType{
			Name: b.name, Arch: "amd64", OperatingSystems: []string{"linux"}, CPU: 2, MemoryMiB: b.memoryMiB, Pods: b.pods,
			Labels: map[string]string{
				familyLabel: "t3", sizeLabel: b.name[len("t3."):], categoryLabel: "t", generationLbl: "3",
			},
			Offerings: offerings(b.price),
		})
	}
	return f
}

func offerings(onDemand float64) []catalog.Offering {
	var out []catalog.Offering
	for _, zone := range zones {
		out = append(out,
			catalog.Offering{Zone: zone, CapacityType: karpv1.CapacityTypeSpot, Price: round(onDemand * 0.35 * spotZoneRatio[zone])},
			catalog.Offering{Zone: zone, CapacityType: karpv1.CapacityTypeOnDemand, Price: onDemand},
		)
	}
	return out
}

func round(price float64) float64 { return math.Round(price*1e6) / 1e6 }

// buildCatalog returns the catalog's instance types as the kwok provider serves them.
func buildCatalog(t *testing.T) cloudprovider.InstanceTypes {
	t.Helper()
	its, err := testCatalog().Build(catalog.BuildOptions{})
	if err != nil {
		t.Fatalf("building the test catalog: %v", err)
	}
	if len(its) != numberOfTypes {
		t.Fatalf("test catalog has %d instance types, want %d", len(its), numberOfTypes)
	}
	return its
}

// byName indexes instance types.
func byName(its cloudprovider.InstanceTypes) map[string]*cloudprovider.InstanceType {
	out := make(map[string]*cloudprovider.InstanceType, len(its))
	for _, it := range its {
		out[it.Name] = it
	}
	return out
}

func familyOf(name string) string {
	for i := range name {
		if name[i] == '.' {
			return name[:i]
		}
	}
	panic(fmt.Sprintf("instance type %q has no family", name))
}
