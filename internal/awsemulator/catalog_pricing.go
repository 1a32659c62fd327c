package awsemulator

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"

	"github.com/joinery-dev/joinery/cloudprovider/aws/catalogdata"
)

// priceListVersion is the publication the emulated price list claims to be.
const (
	priceListVersion     = "20251101000000"
	priceListPublication = "2025-11-01T00:00:00Z"
)

// product is one SKU of the AmazonEC2 price list: a type in a region with an operating system,
// tenancy and capacity status.
type product struct {
	it         *catalogdata.InstanceType
	region     string
	os         string
	tenancy    string // Shared or Dedicated
	capacity   string // Used or UnusedCapacityReservation
	attributes map[string]string
}

// dedicatedPremium is what Dedicated tenancy costs over Shared.
const dedicatedPremium = 1.1

// products lists the price list's SKUs for every catalog type in every priced region. Besides
// the Linux shared on-demand SKU a provider wants, it carries the neighbours a careless filter
// would also pick up: Windows, Dedicated tenancy, unused capacity reservations.
func (c *catalogState) products() []product {
	if c.productList != nil {
		return c.productList
	}
	var out []product
	for region := range catalogdata.Locations {
		for _, it := range c.types {
			for _, v := range []struct{ os, tenancy, capacity string }{
				{catalogdata.OSLinux, "Shared", "Used"},
				{catalogdata.OSLinux, "Shared", "UnusedCapacityReservation"},
				{catalogdata.OSLinux, "Dedicated", "Used"},
				{catalogdata.OSWindows, "Shared", "Used"},
			} {
				p := product{it: it, region: region, os: v.os, tenancy: v.tenancy, capacity: v.capacity}
				p.attributes = p.attrs()
				out = append(out, p)
			}
		}
	}
	sortProducts(out)
	c.productList = out
	return out
}

func (p product) attrs() map[string]string {
	usagePrefix := map[string]string{"us-east-1": "", "us-west-2": "USW2-"}[p.region]
	usage := "BoxUsage:"
	if p.tenancy == "Dedicated" {
		usage = "DedicatedUsage:"
	}
	operation := "RunInstances"
	if p.os == catalogdata.OSWindows {
		operation = "RunInstances:0002"
	}
	storage := "EBS only"
	if p.it.InstanceStoreTotalGB > 0 {
		storage = fmt.Sprintf("%d x %d NVMe %s", p.it.InstanceStoreDisks, p.it.InstanceStoreDiskGB, strings.ToUpper(p.it.InstanceStoreType))
	}
	attrs := map[string]string{
		"servicecode":           "AmazonEC2",
		"servicename":           "Amazon Elastic Compute Cloud",
		"instanceType":          p.it.Name,
		"instanceFamily":        instanceFamilyName(p.it),
		"regionCode":            p.region,
		"location":              catalogdata.Locations[p.region],
		"locationType":          "AWS Region",
		"operatingSystem":       p.os,
		"tenancy":               p.tenancy,
		"capacitystatus":        p.capacity,
		"preInstalledSw":        "NA",
		"licenseModel":          "No License required",
		"marketoption":          "OnDemand",
		"vcpu":                  strconv.Itoa(int(p.it.VCPUs)),
		"memory":                strings.TrimSuffix(strconv.FormatFloat(float64(p.it.MemoryMiB)/1024, 'f', 2, 64), ".00") + " GiB",
		"storage":               storage,
		"networkPerformance":    p.it.NetworkPerformance,
		"processorArchitecture": "64-bit",
		"currentGeneration":     "Yes",
		"usagetype":             usagePrefix + usage + p.it.Name,
		"operation":             operation,
	}
	if p.os == catalogdata.OSWindows {
		attrs["licenseModel"] = "License included"
	}
	if p.it.GPU != nil {
		attrs["gpu"] = strconv.Itoa(int(p.it.GPU.Count))
	}
	return attrs
}

func instanceFamilyName(it *catalogdata.InstanceType) string {
	switch {
	case it.Accelerated():
		return "GPU instance"
	case strings.HasPrefix(it.Family, "c"):
		return "Compute optimized"
	case strings.HasPrefix(it.Family, "r"), strings.HasPrefix(it.Family, "x"):
		return "Memory optimized"
	case strings.HasPrefix(it.Family, "i"), strings.HasPrefix(it.Family, "d"):
		return "Storage optimized"
	}
	return "General purpose"
}

func (c *catalogState) price(p product) float64 {
	if v, ok := c.onDemand[priceKey{p.region, p.it.Name, p.os}]; ok && p.tenancy == "Shared" {
		return v
	}
	price, _ := p.it.OnDemandPrice(p.region, p.os)
	if p.tenancy == "Dedicated" {
		price *= dedicatedPremium
	}
	return price
}

type pricingFilter struct {
	Type  string `json:"Type"`
	Field string `json:"Field"`
	Value string `json:"Value"`
}

func (f pricingFilter) matches(attrs map[string]string) (bool, error) {
	var value string
	found := false
	for k, v := range attrs {
		if strings.EqualFold(k, f.Field) {
			value, found = v, true
			break
		}
	}
	switch f.Type {
	case "TERM_MATCH":
		return found && strings.EqualFold(value, f.Value), nil
	case "EQUALS":
		return found && value == f.Value, nil
	case "CONTAINS":
		return found && strings.Contains(value, f.Value), nil
	case "ANY_OF", "NONE_OF":
		in := false
		for _, v := range strings.Split(f.Value, ",") {
			if found && strings.TrimSpace(v) == value {
				in = true
			}
		}
		return in == (f.Type == "ANY_OF"), nil
	}
	return false, &APIError{Code: "InvalidParameterException", Message: fmt.Sprintf("filter type %q is not supported", f.Type)}
}

// getProducts is Pricing's GetProducts for the AmazonEC2 service code: products matching every
// filter, MaxResults (1..100, default 100) at a time, each price list entry a JSON string in the
// aws_v1 format.
func (s *Server) getProducts(_ context.Context, body json.RawMessage) (any, error) {
	var in struct {
		ServiceCode   string          `json:"ServiceCode"`
		Filters       []pricingFilter `json:"Filters"`
		FormatVersion string          `json:"FormatVersion"`
		NextToken     string          `json:"NextToken"`
		MaxResults    *int            `json:"MaxResults"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, &APIError{Code: "InvalidParameterException", Message: "malformed request: " + err.Error()}
	}
	if in.FormatVersion != "" && in.FormatVersion != "aws_v1" {
		return nil, &APIError{Code: "InvalidParameterException", Message: "unsupported FormatVersion " + in.FormatVersion}
	}
	if in.ServiceCode != "AmazonEC2" {
		return nil, &APIError{Code: "NotFoundException", Message: fmt.Sprintf("service code %q is not emulated (only AmazonEC2)", in.ServiceCode)}
	}
	size := 100
	if in.MaxResults != nil {
		size = *in.MaxResults
	}
	if size < 1 || size > 100 {
		return nil, &APIError{Code: "InvalidParameterException", Message: fmt.Sprintf("MaxResults %d is not between 1 and 100", size)}
	}
	var matched []product
	for _, p := range s.catalog.products() {
		ok := true
		for _, f := range in.Filters {
			m, err := f.matches(p.attributes)
			if err != nil {
				return nil, err
			}
			ok = ok && m
		}
		if ok {
			matched = append(matched, p)
		}
	}
	start, err := catalogTokenOffset(in.NextToken, "GetProducts")
	if err != nil {
		return nil, &APIError{Code: "InvalidNextTokenException", Message: err.(*APIError).Message}
	}
	start = min(start, len(matched))
	end := min(start+size, len(matched))
	out := struct {
		FormatVersion string   `json:"FormatVersion"`
		PriceList     []string `json:"PriceList"`
		NextToken     string   `json:"NextToken,omitempty"`
	}{FormatVersion: "aws_v1", PriceList: []string{}}
	for _, p := range matched[start:end] {
		doc, err := json.Marshal(s.catalog.priceListEntry(p))
		if err != nil {
			return nil, fmt.Errorf("encoding the price list entry of %s: %w", p.it.Name, err)
		}
		out.PriceList = append(out.PriceList, string(doc))
	}
	if end < len(matched) {
		out.NextToken = catalogToken("GetProducts", end)
	}
	return out, nil
}

func sortProducts(ps []product) {
	key := func(p product) string {
		return p.region + "|" + p.it.Name + "|" + p.os + "|" + p.tenancy + "|" + p.capacity
	}
	sort.Slice(ps, func(i, j int) bool { return key(ps[i]) < key(ps[j]) })
}

// priceListEntry is the aws_v1 document of one SKU with its on-demand term.
func (c *catalogState) priceListEntry(p product) map[string]any {
	sku := skuOf(p.region, p.it.Name, p.os, p.tenancy, p.capacity)
	const offerTerm = "JRTCKXETXF" // AWS's on-demand offer term code
	rateCode := sku + "." + offerTerm + ".6YS6EN2CT7"
	price := c.price(p)
	return map[string]any{
		"product": map[string]any{
			"productFamily": "Compute Instance",
			"attributes":    p.attributes,
			"sku":           sku,
		},
		"serviceCode":     "AmazonEC2",
		"version":         priceListVersion,
		"publicationDate": priceListPublication,
		"terms": map[string]any{
			"OnDemand": map[string]any{
				sku + "." + offerTerm: map[string]any{
					"offerTermCode":  offerTerm,
					"sku":            sku,
					"effectiveDate":  priceListPublication,
					"termAttributes": map[string]string{},
					"priceDimensions": map[string]any{
						rateCode: map[string]any{
							"rateCode":     rateCode,
							"description":  fmt.Sprintf("$%s per On Demand %s %s Instance Hour", strconv.FormatFloat(price, 'f', -1, 64), p.os, p.it.Name),
							"beginRange":   "0",
							"endRange":     "Inf",
							"unit":         "Hrs",
							"appliesTo":    []string{},
							"pricePerUnit": map[string]string{"USD": strconv.FormatFloat(price, 'f', 10, 64)},
						},
					},
				},
			},
		},
	}
}

// skuOf derives a stable 16-character SKU from the product's identity.
func skuOf(parts ...string) string {
	h := fnv.New64a()
	for _, p := range parts {
		_, _ = h.Write([]byte(p + "\x00"))
	}
	const alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	sum := h.Sum64()
	out := make([]byte, 16)
	for i := range out {
		out[i] = alphabet[sum%32]
		sum = sum/32 ^ uint64(i)*0x9e3779b97f4a7c15
	}
	return string(out)
}
