package awsemulator

import (
	"context"
	"encoding/base64"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/joinery-dev/joinery/cloudprovider/aws/catalogdata"
)

// catalogState is the emulator's view of the instance-type catalog for its region: what is
// offered where, and prices that tests may change.
type catalogState struct {
	types  []*catalogdata.InstanceType // sorted by name
	byName map[string]*catalogdata.InstanceType
	// offered[zone][type] says the type can be launched in the zone.
	offered map[string]map[string]bool
	// onDemand overrides catalog prices, keyed by priceKey.
	onDemand map[priceKey]float64
	// spot is every spot price record, in no particular order.
	spot []spotRecord
	// productList caches the Pricing API's SKUs, built on first use.
	productList []product
}

type priceKey struct{ region, instanceType, os string }

type spotRecord struct {
	instanceType string
	zone         Zone
	product      string // Linux/UNIX or Windows
	price        float64
	at           time.Time
}

// Spot product descriptions the emulator publishes prices for.
const (
	productLinux   = "Linux/UNIX"
	productWindows = "Windows"
)

// registerCatalog registers instance types, offerings, spot prices and Pricing.
func (s *Server) registerCatalog() {
	s.catalog = newCatalogState(s.Region, s.started)
	s.handleQuery(ServiceEC2, "DescribeInstanceTypes", s.describeInstanceTypes)
	s.handleQuery(ServiceEC2, "DescribeInstanceTypeOfferings", s.describeInstanceTypeOfferings)
	s.handleQuery(ServiceEC2, "DescribeSpotPriceHistory", s.describeSpotPriceHistory)
	s.handleJSON(ServicePricing, "GetProducts", s.getProducts)
}

func newCatalogState(region string, now time.Time) *catalogState {
	all := catalogdata.All()
	c := &catalogState{
		types:    make([]*catalogdata.InstanceType, len(all)),
		byName:   make(map[string]*catalogdata.InstanceType, len(all)),
		offered:  map[string]map[string]bool{},
		onDemand: map[priceKey]float64{},
	}
	for i := range all {
		it := &all[i]
		c.types[i], c.byName[it.Name] = it, it
	}
	for _, z := range regions[region] {
		c.offered[z.Name] = map[string]bool{}
		for _, it := range c.types {
			if !it.OfferedIn(z.Name) {
				continue
			}
			c.offered[z.Name][it.Name] = true
			for product, os := range map[string]string{productLinux: catalogdata.OSLinux, productWindows: catalogdata.OSWindows} {
				for _, p := range it.SpotHistory(z.Name, os, now) {
					c.spot = append(c.spot, spotRecord{instanceType: it.Name, zone: z, product: product, price: p.Price, at: p.Time})
				}
			}
		}
	}
	return c
}

// SetOnDemandPrice changes the Linux on-demand price the Pricing API reports for instanceType
// in the server's region.
func (s *Server) SetOnDemandPrice(instanceType string, price float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.catalog.onDemand[priceKey{s.Region, instanceType, catalogdata.OSLinux}] = price
}

// SetSpotPrice publishes a Linux/UNIX spot price for instanceType in zone at time at.
func (s *Server) SetSpotPrice(instanceType, zone string, price float64, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	z, ok := s.zone(zone)
	if !ok {
		panic(fmt.Sprintf("awsemulator: SetSpotPrice: no zone %q in %s", zone, s.Region))
	}
	s.catalog.spot = append(s.catalog.spot, spotRecord{instanceType: instanceType, zone: z, product: productLinux, price: price, at: at})
}

// RemoveOffering stops offering instanceType in zone.
func (s *Server) RemoveOffering(instanceType, zone string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.catalog.offered[zone], instanceType)
}

// Offered reports whether instanceType is offered in zone.
func (s *Server) Offered(instanceType, zone string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.catalog.offered[zone][instanceType]
}

func (s *Server) describeInstanceTypes(_ context.Context, q Query) (any, error) {
	names := q.List("InstanceType")
	var missing []string
	for _, n := range names {
		if _, ok := s.catalog.byName[n]; !ok {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return nil, &APIError{Code: "InvalidInstanceType", Message: fmt.Sprintf("The following supplied instance types do not exist: [%s]", strings.Join(missing, ", "))}
	}
	filters := q.Filters()
	for _, f := range filters {
		if _, ok := instanceTypeFilters[f.Name]; !ok {
			return nil, errInvalidParameter("The filter '%s' is invalid", f.Name)
		}
	}
	var matched []*catalogdata.InstanceType
	for _, it := range s.catalog.types {
		if len(names) > 0 && !contains(names, it.Name) {
			continue
		}
		if catalogFiltersMatch(filters, func(name string) []string { return instanceTypeFilters[name](it) }) {
			matched = append(matched, it)
		}
	}
	page, next, err := catalogPage(q, "DescribeInstanceTypes", len(matched), 5, 100, 100)
	if err != nil {
		return nil, err
	}
	out := make([]instanceTypeXML, 0, page.end-page.start)
	for _, it := range matched[page.start:page.end] {
		out = append(out, instanceTypeInfo(it))
	}
	return struct {
		InstanceTypes []instanceTypeXML `xml:"instanceTypeSet>item"`
		NextToken     string            `xml:"nextToken,omitempty"`
	}{out, next}, nil
}

// instanceTypeFilters are the DescribeInstanceTypes filters the emulator supports, each giving
// a type's values for the filter.
var instanceTypeFilters = map[string]func(*catalogdata.InstanceType) []string{
	"instance-type":                   func(it *catalogdata.InstanceType) []string { return []string{it.Name} },
	"current-generation":              func(it *catalogdata.InstanceType) []string { return []string{strconv.FormatBool(it.CurrentGeneration)} },
	"bare-metal":                      func(it *catalogdata.InstanceType) []string { return []string{strconv.FormatBool(it.BareMetal)} },
	"burstable-performance-supported": func(it *catalogdata.InstanceType) []string { return []string{strconv.FormatBool(it.Burstable)} },
	"hypervisor":                      func(it *catalogdata.InstanceType) []string { return []string{it.Hypervisor} },
	"processor-info.supported-architecture": func(it *catalogdata.InstanceType) []string {
		return instanceTypeInfo(it).ProcessorInfo.SupportedArchitectures
	},
	"supported-virtualization-type": func(*catalogdata.InstanceType) []string { return []string{"hvm"} },
	"supported-usage-class":         func(it *catalogdata.InstanceType) []string { return it.UsageClasses },
	"vcpu-info.default-vcpus":       func(it *catalogdata.InstanceType) []string { return []string{strconv.Itoa(int(it.VCPUs))} },
	"memory-info.size-in-mib":       func(it *catalogdata.InstanceType) []string { return []string{strconv.FormatInt(it.MemoryMiB, 10)} },
	"instance-storage-supported": func(it *catalogdata.InstanceType) []string {
		return []string{strconv.FormatBool(it.InstanceStoreTotalGB > 0)}
	},
	"network-info.efa-supported": func(it *catalogdata.InstanceType) []string {
		return []string{strconv.FormatBool(it.MaxEFAInterfaces > 0)}
	},
}

func (s *Server) describeInstanceTypeOfferings(_ context.Context, q Query) (any, error) {
	locationType := q.Get("LocationType")
	if locationType == "" {
		locationType = "region"
	}
	type offering struct{ instanceType, location string }
	var all []offering
	switch locationType {
	case "region":
		for _, it := range s.catalog.types {
			for _, z := range regions[s.Region] {
				if s.catalog.offered[z.Name][it.Name] {
					all = append(all, offering{it.Name, s.Region})
					break
				}
			}
		}
	case "availability-zone", "availability-zone-id":
		for _, z := range regions[s.Region] {
			location := z.Name
			if locationType == "availability-zone-id" {
				location = z.ID
			}
			for _, it := range s.catalog.types {
				if s.catalog.offered[z.Name][it.Name] {
					all = append(all, offering{it.Name, location})
				}
			}
		}
	default:
		return nil, errInvalidParameter("Value (%s) for parameter locationType is invalid. Valid values are region, availability-zone, availability-zone-id", locationType)
	}
	filters := q.Filters()
	for _, f := range filters {
		if f.Name != "location" && f.Name != "instance-type" {
			return nil, errInvalidParameter("The filter '%s' is invalid", f.Name)
		}
	}
	var matched []instanceTypeOfferingXML
	for _, o := range all {
		if catalogFiltersMatch(filters, func(name string) []string {
			if name == "location" {
				return []string{o.location}
			}
			return []string{o.instanceType}
		}) {
			matched = append(matched, instanceTypeOfferingXML{InstanceType: o.instanceType, LocationType: locationType, Location: o.location})
		}
	}
	page, next, err := catalogPage(q, "DescribeInstanceTypeOfferings", len(matched), 5, 1000, 1000)
	if err != nil {
		return nil, err
	}
	return struct {
		Offerings []instanceTypeOfferingXML `xml:"instanceTypeOfferingSet>item"`
		NextToken string                    `xml:"nextToken,omitempty"`
	}{matched[page.start:page.end], next}, nil
}

// describeSpotPriceHistory answers like EC2: with StartTime, the prices published between
// StartTime and EndTime (default now) plus, for each type, zone and product, the price in effect
// at StartTime; newest first.
func (s *Server) describeSpotPriceHistory(_ context.Context, q Query) (any, error) {
	start, hasStart, err := catalogQueryTime(q, "StartTime")
	if err != nil {
		return nil, err
	}
	end, hasEnd, err := catalogQueryTime(q, "EndTime")
	if err != nil {
		return nil, err
	}
	if !hasEnd {
		end = time.Now()
	}
	types, products := q.List("InstanceType"), q.List("ProductDescription")
	zoneName, zoneID := q.Get("AvailabilityZone"), q.Get("AvailabilityZoneId")
	filters := q.Filters()
	for _, f := range filters {
		switch f.Name {
		case "availability-zone", "instance-type", "product-description", "spot-price", "timestamp":
		default:
			return nil, errInvalidParameter("The filter '%s' is invalid", f.Name)
		}
	}
	type series struct{ instanceType, zone, product string }
	inEffect := map[series]spotRecord{} // the latest record at or before start, per series
	var matched []spotRecord
	for _, r := range s.catalog.spot {
		if len(types) > 0 && !contains(types, r.instanceType) ||
			len(products) > 0 && !contains(products, r.product) ||
			zoneName != "" && r.zone.Name != zoneName || zoneID != "" && r.zone.ID != zoneID ||
			r.at.After(end) {
			continue
		}
		if !catalogFiltersMatch(filters, func(name string) []string {
			switch name {
			case "availability-zone":
				return []string{r.zone.Name}
			case "instance-type":
				return []string{r.instanceType}
			case "product-description":
				return []string{r.product}
			case "spot-price":
				return []string{formatPrice(r.price)}
			default:
				return []string{r.at.UTC().Format(time.RFC3339)}
			}
		}) {
			continue
		}
		if hasStart && r.at.Before(start) {
			key := series{r.instanceType, r.zone.Name, r.product}
			if prev, ok := inEffect[key]; !ok || r.at.After(prev.at) {
				inEffect[key] = r
			}
			continue
		}
		matched = append(matched, r)
	}
	for _, r := range inEffect {
		matched = append(matched, r)
	}
	sort.Slice(matched, func(i, j int) bool {
		a, b := matched[i], matched[j]
		if !a.at.Equal(b.at) {
			return a.at.After(b.at)
		}
		if a.instanceType != b.instanceType {
			return a.instanceType < b.instanceType
		}
		if a.zone.Name != b.zone.Name {
			return a.zone.Name < b.zone.Name
		}
		return a.product < b.product
	})
	page, next, err := catalogPage(q, "DescribeSpotPriceHistory", len(matched), 1, 1000, 1000)
	if err != nil {
		return nil, err
	}
	out := make([]spotPriceXML, 0, page.end-page.start)
	for _, r := range matched[page.start:page.end] {
		out = append(out, spotPriceXML{
			InstanceType: r.instanceType, ProductDescription: r.product, SpotPrice: formatPrice(r.price),
			Timestamp: r.at.UTC().Format("2006-01-02T15:04:05.000Z"), AvailabilityZone: r.zone.Name, AvailabilityZoneID: r.zone.ID,
		})
	}
	return struct {
		SpotPrices []spotPriceXML `xml:"spotPriceHistorySet>item"`
		NextToken  string         `xml:"nextToken"`
	}{out, next}, nil
}

func catalogQueryTime(q Query, key string) (time.Time, bool, error) {
	raw := q.Get(key)
	if raw == "" {
		return time.Time{}, false, nil
	}
	t, err := time.Parse(time.RFC3339Nano, raw)
	if err != nil {
		return time.Time{}, false, errInvalidParameter("Value (%s) for parameter %s is invalid", raw, key)
	}
	return t, true, nil
}

// catalogFiltersMatch applies EC2's filter semantics: every filter must match (AND), and a filter
// matches when any of its values (OR, with * and ? wildcards) matches any of the item's values.
// Filter names are validated by each caller before matching.
func catalogFiltersMatch(filters []Filter, valuesOf func(name string) []string) bool {
	for _, f := range filters {
		if !anyMatches(f.Values, valuesOf(f.Name)) {
			return false
		}
	}
	return true
}

type catalogPageRange struct{ start, end int }

// catalogPage reads MaxResults (between lo and hi, def when absent) and NextToken, and returns the
// range of total items to answer with and the token for the rest ("" when none).
func catalogPage(q Query, action string, total, lo, hi, def int) (catalogPageRange, string, error) {
	size, err := q.Int("MaxResults", def)
	if err != nil {
		return catalogPageRange{}, "", err
	}
	if size < lo || size > hi {
		return catalogPageRange{}, "", errInvalidParameter("Value (%d) for parameter maxResults is invalid. Expecting a value between %d and %d.", size, lo, hi)
	}
	start, err := catalogTokenOffset(q.Get("NextToken"), action)
	if err != nil {
		return catalogPageRange{}, "", err
	}
	start = min(start, total)
	end := min(start+size, total)
	next := ""
	if end < total {
		next = catalogToken(action, end)
	}
	return catalogPageRange{start, end}, next, nil
}

func catalogToken(action string, offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte(action + ":" + strconv.Itoa(offset)))
}

func catalogTokenOffset(token, action string) (int, error) {
	if token == "" {
		return 0, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	prefix, offset, ok := strings.Cut(string(raw), ":")
	n, convErr := strconv.Atoi(offset)
	if err != nil || !ok || prefix != action || convErr != nil || n < 0 {
		return 0, &APIError{Code: "InvalidNextToken", Message: "The specified token is invalid: " + token}
	}
	return n, nil
}
