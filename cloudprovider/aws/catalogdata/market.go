package catalogdata

import (
	"hash/fnv"
	"math"
	"strings"
	"time"
)

// Locations are the Pricing API's names of the regions the catalog prices.
var Locations = map[string]string{
	"us-east-1": "US East (N. Virginia)",
	"us-west-2": "US West (Oregon)",
}

// windowsSurchargePerVCPU is what a Windows license adds to the Linux price per vCPU-hour
// (m5.large: $0.096 Linux, $0.188 Windows).
const windowsSurchargePerVCPU = 0.046

// Operating systems the catalog prices, as the Pricing API and spot price history name them.
const (
	OSLinux   = "Linux"
	OSWindows = "Windows"
)

// OnDemandPrice is the hourly on-demand price of it in region for os (OSLinux or OSWindows).
// The two regions share list prices for every family in the catalog.
func (it InstanceType) OnDemandPrice(region, os string) (float64, bool) {
	if _, ok := Locations[region]; !ok {
		return 0, false
	}
	switch os {
	case OSLinux:
		return it.OnDemandUSD, true
	case OSWindows:
		return roundPrice(it.OnDemandUSD + windowsSurchargePerVCPU*float64(it.VCPUs)), true
	}
	return 0, false
}

// Accelerated reports whether the type has GPUs or Neuron devices.
func (it InstanceType) Accelerated() bool { return it.GPU != nil || it.Neuron != nil }

// scarce families are offered in two zones of a region only.
var scarce = map[string]bool{"p3dn": true, "p4d": true, "p5": true, "trn1": true, "x2idn": true}

// OfferedIn reports whether the type can be launched in zone (a zone name such as us-west-2a).
// The rules mirror how AWS rolls types out: us-east-1e (use1-az3) only has older families,
// the newest zone of us-west-2 (d) has no accelerators or x-family, the largest accelerated
// and memory types live in two zones, and Graviton4 has not reached the c zones yet.
func (it InstanceType) OfferedIn(zone string) bool {
	letter := zone[len(zone)-1:]
	switch {
	case zone == "us-east-1e":
		return it.Generation <= 5 && !it.Accelerated()
	case zone == "us-west-2d" && (it.Accelerated() || strings.HasPrefix(it.Family, "x")):
		return false
	case scarce[it.Family]:
		return letter == "a" || letter == "b"
	case it.Generation == 8 && letter == "c":
		return false
	}
	return true
}

// SpotPoint is one entry of a spot price history.
type SpotPoint struct {
	Time  time.Time
	Price float64
}

// spotAges are how long before now the history's entries were published, oldest first.
var spotAges = []time.Duration{6 * time.Hour, 3 * time.Hour, 90 * time.Minute, 40 * time.Minute, 10 * time.Minute}

// SpotHistory is the spot price history of it in zone for os, oldest first, ending shortly
// before now. Prices sit between 30 % and 60 % of on-demand, move by a few percent between
// entries and are the same for the same arguments.
func (it InstanceType) SpotHistory(zone, os string, now time.Time) []SpotPoint {
	onDemand, ok := it.OnDemandPrice("us-east-1", os)
	if !ok {
		return nil
	}
	discount := 0.30 + float64(hash(it.Name, zone)%3000)/10000
	out := make([]SpotPoint, 0, len(spotAges))
	for i, age := range spotAges {
		jitter := float64(hash(it.Name, zone, string(rune('0'+i)))%1000)/1000 - 0.5 // [-0.5, 0.5)
		price := onDemand * discount * (1 + 0.08*jitter)
		out = append(out, SpotPoint{Time: now.Add(-age).Truncate(time.Second), Price: math.Round(price*1e6) / 1e6})
	}
	return out
}

func hash(parts ...string) uint32 {
	h := fnv.New32a()
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	return h.Sum32()
}
