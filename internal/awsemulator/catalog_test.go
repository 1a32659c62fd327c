package awsemulator

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"

	"github.com/joinery-dev/joinery/cloudprovider/aws/catalogdata"
)

func TestDescribeInstanceTypesPaginatesTheWholeCatalog(t *testing.T) {
	srv := NewServer(Options{})
	defer srv.Close()
	client := ec2.NewFromConfig(srv.Config())
	pages, seen := 0, map[string]bool{}
	paginator := ec2.NewDescribeInstanceTypesPaginator(client, &ec2.DescribeInstanceTypesInput{MaxResults: aws.Int32(50)})
	for paginator.HasMorePages() {
		out, err := paginator.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, it := range out.InstanceTypes {
			if seen[string(it.InstanceType)] {
				t.Errorf("%s returned twice", it.InstanceType)
			}
			seen[string(it.InstanceType)] = true
		}
	}
	if want := len(catalogdata.All()); len(seen) != want || pages != (want+49)/50 {
		t.Errorf("got %d types in %d pages, want %d in %d", len(seen), pages, want, (want+49)/50)
	}
}

func TestDescribeInstanceTypesDecodesEveryFact(t *testing.T) {
	srv := NewServer(Options{})
	defer srv.Close()
	out, err := ec2.NewFromConfig(srv.Config()).DescribeInstanceTypes(context.Background(), &ec2.DescribeInstanceTypesInput{
		InstanceTypes: []ec2types.InstanceType{"p4d.24xlarge", "trn1.32xlarge", "i3.metal"},
	})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]ec2types.InstanceTypeInfo{}
	for _, it := range out.InstanceTypes {
		byName[string(it.InstanceType)] = it
	}
	p4d := byName["p4d.24xlarge"]
	if aws.ToInt32(p4d.VCpuInfo.DefaultVCpus) != 96 || aws.ToInt64(p4d.MemoryInfo.SizeInMiB) != 1179648 ||
		p4d.Hypervisor != ec2types.InstanceTypeHypervisorNitro || !aws.ToBool(p4d.NetworkInfo.EfaSupported) ||
		aws.ToInt32(p4d.NetworkInfo.EfaInfo.MaximumEfaInterfaces) != 4 || len(p4d.NetworkInfo.NetworkCards) != 4 ||
		aws.ToInt32(p4d.NetworkInfo.NetworkCards[0].MaximumNetworkInterfaces) != 15 ||
		aws.ToString(p4d.GpuInfo.Gpus[0].Name) != "A100" || aws.ToInt32(p4d.GpuInfo.Gpus[0].Count) != 8 ||
		aws.ToInt32(p4d.GpuInfo.Gpus[0].MemoryInfo.SizeInMiB) != 40960 ||
		aws.ToInt64(p4d.InstanceStorageInfo.TotalSizeInGB) != 8000 || p4d.InstanceStorageInfo.NvmeSupport != ec2types.EphemeralNvmeSupportRequired ||
		aws.ToInt32(p4d.EbsInfo.EbsOptimizedInfo.MaximumBandwidthInMbps) != 19000 {
		t.Errorf("p4d.24xlarge decoded wrong: %+v", p4d)
	}
	trn1 := byName["trn1.32xlarge"]
	if trn1.NeuronInfo == nil || aws.ToString(trn1.NeuronInfo.NeuronDevices[0].Name) != "Trainium" || aws.ToInt32(trn1.NeuronInfo.NeuronDevices[0].Count) != 16 {
		t.Errorf("trn1.32xlarge neuron info = %+v", trn1.NeuronInfo)
	}
	metal := byName["i3.metal"]
	if !aws.ToBool(metal.BareMetal) || metal.Hypervisor != "" || metal.ProcessorInfo.SupportedArchitectures[0] != ec2types.ArchitectureTypeX8664 ||
		aws.ToString(metal.ProcessorInfo.Manufacturer) != "Intel" || aws.ToFloat64(metal.ProcessorInfo.SustainedClockSpeedInGhz) != 2.3 {
		t.Errorf("i3.metal decoded wrong: %+v", metal)
	}
}

func TestDescribeInstanceTypesFiltersAndErrors(t *testing.T) {
	srv := NewServer(Options{})
	defer srv.Close()
	client := ec2.NewFromConfig(srv.Config())
	ctx := context.Background()
	out, err := client.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{Filters: []ec2types.Filter{
		{Name: aws.String("instance-type"), Values: []string{"m7g.*", "c7g.*"}},
		{Name: aws.String("bare-metal"), Values: []string{"false"}},
		{Name: aws.String("processor-info.supported-architecture"), Values: []string{"arm64"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.InstanceTypes) != 16 {
		t.Errorf("m7g.* or c7g.*, not metal: %d types, want 16", len(out.InstanceTypes))
	}
	_, err = client.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []ec2types.InstanceType{"m5.large", "m5.huge"}})
	if got := errorCode(err); got != "InvalidInstanceType" {
		t.Errorf("unknown type: code %q (%v)", got, err)
	}
	_, err = client.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{Filters: []ec2types.Filter{{Name: aws.String("colour"), Values: []string{"red"}}}})
	if got := errorCode(err); got != "InvalidParameterValue" {
		t.Errorf("unknown filter: code %q (%v)", got, err)
	}
	_, err = client.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{NextToken: aws.String("garbage")})
	if got := errorCode(err); got != "InvalidNextToken" {
		t.Errorf("bad token: code %q (%v)", got, err)
	}
}

func TestDescribeInstanceTypeOfferings(t *testing.T) {
	srv := NewServer(Options{Region: "us-east-1"})
	defer srv.Close()
	client := ec2.NewFromConfig(srv.Config())
	ctx := context.Background()
	zonesOf := func(locationType ec2types.LocationType, instanceType string) []string {
		t.Helper()
		out, err := client.DescribeInstanceTypeOfferings(ctx, &ec2.DescribeInstanceTypeOfferingsInput{
			LocationType: locationType,
			Filters:      []ec2types.Filter{{Name: aws.String("instance-type"), Values: []string{instanceType}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		var locations []string
		for _, o := range out.InstanceTypeOfferings {
			if o.LocationType != locationType {
				t.Errorf("location type %q, want %q", o.LocationType, locationType)
			}
			locations = append(locations, aws.ToString(o.Location))
		}
		return locations
	}
	if got := zonesOf(ec2types.LocationTypeAvailabilityZone, "m5.large"); len(got) != 6 {
		t.Errorf("m5.large zones = %v, want all 6", got)
	}
	if got := zonesOf(ec2types.LocationTypeAvailabilityZone, "m6i.large"); len(got) != 5 || contains(got, "us-east-1e") {
		t.Errorf("m6i.large zones = %v, want all but us-east-1e", got)
	}
	if got := zonesOf(ec2types.LocationTypeAvailabilityZoneId, "p4d.24xlarge"); len(got) != 2 || got[0] != "use1-az6" || got[1] != "use1-az1" {
		t.Errorf("p4d.24xlarge zone ids = %v, want [use1-az6 use1-az1]", got)
	}
	if got := zonesOf(ec2types.LocationTypeRegion, "g5.xlarge"); len(got) != 1 || got[0] != "us-east-1" {
		t.Errorf("g5.xlarge regions = %v", got)
	}
	srv.RemoveOffering("m5.large", "us-east-1a")
	if got := zonesOf(ec2types.LocationTypeAvailabilityZone, "m5.large"); len(got) != 5 || contains(got, "us-east-1a") {
		t.Errorf("after RemoveOffering: %v", got)
	}

	total := 0
	paginator := ec2.NewDescribeInstanceTypeOfferingsPaginator(client, &ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone, MaxResults: aws.Int32(1000)})
	for paginator.HasMorePages() {
		out, err := paginator.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		total += len(out.InstanceTypeOfferings)
	}
	if total < 2000 {
		t.Errorf("%d zone offerings across 6 zones, want over 2000", total)
	}
}

func TestDescribeSpotPriceHistory(t *testing.T) {
	srv := NewServer(Options{})
	defer srv.Close()
	client := ec2.NewFromConfig(srv.Config())
	ctx := context.Background()
	now := time.Now()

	history, err := client.DescribeSpotPriceHistory(ctx, &ec2.DescribeSpotPriceHistoryInput{
		InstanceTypes:       []ec2types.InstanceType{"m5.large"},
		ProductDescriptions: []string{"Linux/UNIX"},
		AvailabilityZone:    aws.String("us-west-2a"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(history.SpotPriceHistory) < 4 {
		t.Fatalf("m5.large history has %d entries, want several", len(history.SpotPriceHistory))
	}
	for i, p := range history.SpotPriceHistory {
		price, _ := strconv.ParseFloat(aws.ToString(p.SpotPrice), 64)
		if price <= 0 || price >= 0.096 || p.ProductDescription != "Linux/UNIX" || aws.ToString(p.AvailabilityZoneId) != "usw2-az2" {
			t.Errorf("entry %d = %+v", i, p)
		}
		if i > 0 && p.Timestamp.After(*history.SpotPriceHistory[i-1].Timestamp) {
			t.Errorf("entries not newest first")
		}
	}

	// StartTime now: only the price in effect, one per type, zone and product.
	srv.SetSpotPrice("m5.large", "us-west-2b", 0.0123, now.Add(-time.Minute))
	current, err := client.DescribeSpotPriceHistory(ctx, &ec2.DescribeSpotPriceHistoryInput{
		InstanceTypes: []ec2types.InstanceType{"m5.large"}, ProductDescriptions: []string{"Linux/UNIX"}, StartTime: aws.Time(now),
	})
	if err != nil {
		t.Fatal(err)
	}
	zones := map[string]string{}
	for _, p := range current.SpotPriceHistory {
		if _, dup := zones[aws.ToString(p.AvailabilityZone)]; dup {
			t.Errorf("zone %s listed twice", aws.ToString(p.AvailabilityZone))
		}
		zones[aws.ToString(p.AvailabilityZone)] = aws.ToString(p.SpotPrice)
	}
	if len(zones) != 4 || zones["us-west-2b"] != "0.012300" {
		t.Errorf("current prices = %v, want 4 zones and the injected 0.012300 in us-west-2b", zones)
	}

	pages := 0
	paginator := ec2.NewDescribeSpotPriceHistoryPaginator(client, &ec2.DescribeSpotPriceHistoryInput{
		Filters:    []ec2types.Filter{{Name: aws.String("instance-type"), Values: []string{"c5.*"}}},
		MaxResults: aws.Int32(100),
	})
	for paginator.HasMorePages() {
		if _, err := paginator.NextPage(ctx); err != nil {
			t.Fatal(err)
		}
		pages++
	}
	if pages < 2 {
		t.Errorf("c5.* history in %d pages of 100, want several", pages)
	}
}

func TestPricingGetProducts(t *testing.T) {
	srv := NewServer(Options{})
	defer srv.Close()
	client := pricing.NewFromConfig(srv.Config())
	ctx := context.Background()
	term := func(field, value string) pricingtypes.Filter {
		return pricingtypes.Filter{Type: pricingtypes.FilterTypeTermMatch, Field: aws.String(field), Value: aws.String(value)}
	}
	filters := []pricingtypes.Filter{
		term("regionCode", "us-west-2"), term("operatingSystem", "Linux"), term("tenancy", "Shared"),
		term("capacitystatus", "Used"), term("preInstalledSw", "NA"),
	}
	prices := map[string]string{}
	pages := 0
	paginator := pricing.NewGetProductsPaginator(client, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), Filters: filters, FormatVersion: aws.String("aws_v1")})
	for paginator.HasMorePages() {
		out, err := paginator.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, doc := range out.PriceList {
			var entry struct {
				Product struct {
					Attributes map[string]string `json:"attributes"`
				} `json:"product"`
				Terms struct {
					OnDemand map[string]struct {
						PriceDimensions map[string]struct {
							PricePerUnit map[string]string `json:"pricePerUnit"`
						} `json:"priceDimensions"`
					} `json:"OnDemand"`
				} `json:"terms"`
			}
			if err := json.Unmarshal([]byte(doc), &entry); err != nil {
				t.Fatalf("price list entry is not JSON: %v", err)
			}
			name := entry.Product.Attributes["instanceType"]
			if _, dup := prices[name]; dup {
				t.Errorf("%s priced twice: filters let another SKU through", name)
			}
			for _, term := range entry.Terms.OnDemand {
				for _, dim := range term.PriceDimensions {
					prices[name] = dim.PricePerUnit["USD"]
				}
			}
		}
	}
	if len(prices) != len(catalogdata.All()) || pages < 5 {
		t.Errorf("%d prices in %d pages, want %d in several", len(prices), pages, len(catalogdata.All()))
	}
	if got := prices["m5.large"]; got != "0.0960000000" {
		t.Errorf("m5.large = %s, want 0.0960000000", got)
	}

	_, err := client.GetProducts(ctx, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonS3")})
	if got := errorCode(err); got != "NotFoundException" {
		t.Errorf("other service code: %q (%v)", got, err)
	}
	srv.Inject(Fault{Service: ServicePricing, Action: "GetProducts", Code: "AccessDeniedException", Message: "denied", Status: http.StatusBadRequest})
	_, err = client.GetProducts(ctx, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2")})
	if got := errorCode(err); got != "AccessDeniedException" {
		t.Errorf("denied: %q (%v)", got, err)
	}
}
