package disruption

import (
	"math"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/kwok/catalog"
)

// The tests' expectations (the fewest nodes that hold some pods, the cheapest type that holds
// one) are computed from the instance types joinery-controller launches from: the kwok
// provider's embedded catalog with default options, as joinery-controller builds it.

// instanceTypes returns the kwok provider's instance types by name.
func instanceTypes(t *testing.T) map[string]*cloudprovider.InstanceType {
	t.Helper()
	its, err := loadInstanceTypes()
	if err != nil {
		t.Fatalf("kwok catalog: %v", err)
	}
	return its
}

var loadInstanceTypes = sync.OnceValues(func() (map[string]*cloudprovider.InstanceType, error) {
	f, err := catalog.Default()
	if err != nil {
		return nil, err
	}
	its, err := f.Build(catalog.BuildOptions{})
	if err != nil {
		return nil, err
	}
	out := make(map[string]*cloudprovider.InstanceType, len(its))
	for _, it := range its {
		out[it.Name] = it
	}
	return out, nil
})

// podsPerNode is how many pods requesting cpu and memory (the tests' pods have no other
// requests) a node of the type holds.
func podsPerNode(it *cloudprovider.InstanceType, cpu, memory string) int {
	alloc := it.Allocatable()
	n := alloc.Pods().Value()
	for name, req := range map[corev1.ResourceName]resource.Quantity{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)} {
		have := alloc[name]
		n = min(n, have.MilliValue()/req.MilliValue())
	}
	return int(n)
}

// fewestNodes is the fewest nodes of the named types that hold n identical pods: all on the
// type that holds the most of them.
func fewestNodes(t *testing.T, types []string, n int, cpu, memory string) int {
	t.Helper()
	its := instanceTypes(t)
	most := 0
	for _, name := range types {
		most = max(most, podsPerNode(its[name], cpu, memory))
	}
	if most == 0 {
		t.Fatalf("no type of %v holds a pod of %s cpu, %s memory", types, cpu, memory)
	}
	return (n + most - 1) / most
}

// cheapestHolding is the cheapest of the named types, by its cheapest offering of the
// capacity type, that holds one pod requesting cpu and memory, and that price.
func cheapestHolding(t *testing.T, types []string, capacityType, cpu, memory string) (string, float64) {
	t.Helper()
	its := instanceTypes(t)
	best, bestPrice := "", math.Inf(1)
	for _, name := range types {
		it := its[name]
		if podsPerNode(it, cpu, memory) < 1 {
			continue
		}
		if p := price(it, capacityType); p < bestPrice {
			best, bestPrice = name, p
		}
	}
	if best == "" {
		t.Fatalf("no type of %v holds a pod of %s cpu, %s memory", types, cpu, memory)
	}
	return best, bestPrice
}

// price is the type's cheapest offering of the capacity type, in any zone.
func price(it *cloudprovider.InstanceType, capacityType string) float64 {
	p := math.Inf(1)
	for _, o := range it.Offerings {
		if o.CapacityType() == capacityType && o.ReservationID() == "" {
			p = math.Min(p, o.Price)
		}
	}
	return p
}

// typePrice is price by type name.
func typePrice(t *testing.T, name, capacityType string) float64 {
	t.Helper()
	it := instanceTypes(t)[name]
	if it == nil {
		t.Fatalf("instance type %q not in the catalog", name)
	}
	return price(it, capacityType)
}

// zonePrice is the price of the type's offering of the capacity type in zone.
func zonePrice(t *testing.T, name, zone, capacityType string) float64 {
	t.Helper()
	for _, o := range instanceTypes(t)[name].Offerings {
		if o.Zone() == zone && o.CapacityType() == capacityType && o.ReservationID() == "" {
			return o.Price
		}
	}
	t.Fatalf("no %s offering of %s in %s", capacityType, name, zone)
	return 0
}

// onDemand is the capacity type most tests' NodePools launch.
const onDemand = karpv1.CapacityTypeOnDemand
