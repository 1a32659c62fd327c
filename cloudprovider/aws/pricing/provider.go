package pricing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/joinery-dev/joinery/cloudprovider/aws/awserr"
)

// PricingAPI is the part of the AWS Pricing client the provider uses (pricing:GetProducts).
// The Pricing API is served from us-east-1 (and a few other regions) whatever region the
// prices are for.
type PricingAPI interface {
	GetProducts(ctx context.Context, in *pricing.GetProductsInput, optFns ...func(*pricing.Options)) (*pricing.GetProductsOutput, error)
}

// SpotPriceAPI is the part of the EC2 client the provider uses (ec2:DescribeSpotPriceHistory).
type SpotPriceAPI interface {
	DescribeSpotPriceHistory(ctx context.Context, in *ec2.DescribeSpotPriceHistoryInput, optFns ...func(*ec2.Options)) (*ec2.DescribeSpotPriceHistoryOutput, error)
}

// Source says where the on-demand prices come from.
type Source string

// On-demand price sources.
const (
	SourceFallback   Source = "fallback"
	SourcePricingAPI Source = "pricing-api"
)

// Options configure a Provider.
type Options struct {
	// Region the prices are for, e.g. us-west-2.
	Region string
	Logger logr.Logger
	// Clock dates spot price queries; the real clock when nil.
	Clock clock.PassiveClock
}

// Provider holds the current prices of one region. It is safe for concurrent use.
type Provider struct {
	pricing PricingAPI
	ec2     SpotPriceAPI
	region  string
	log     logr.Logger
	clock   clock.PassiveClock

	mu       sync.RWMutex
	onDemand map[string]float64
	source   Source
	// spot maps instance type to zone to the latest price, with when it was published.
	spot map[string]map[string]spotPrice
}

type spotPrice struct {
	price float64
	at    time.Time
}

// New returns a provider seeded with the fallback table of opts.Region. pricingAPI may be nil
// when the caller may not call the Pricing API; on-demand prices then stay the fallback's.
func New(pricingAPI PricingAPI, spotAPI SpotPriceAPI, opts Options) *Provider {
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	p := &Provider{
		pricing:  pricingAPI,
		ec2:      spotAPI,
		region:   opts.Region,
		log:      opts.Logger,
		clock:    clk,
		onDemand: maps.Clone(fallbackOnDemand[opts.Region]),
		source:   SourceFallback,
		spot:     map[string]map[string]spotPrice{},
	}
	if p.onDemand == nil {
		p.onDemand = map[string]float64{}
		p.log.Info("no fallback on-demand prices for the region; on-demand offerings wait for the Pricing API", "region", opts.Region)
	}
	return p
}

// FallbackOnDemandPrice is the built-in list price of instanceType in region.
func FallbackOnDemandPrice(region, instanceType string) (float64, bool) {
	price, ok := fallbackOnDemand[region][instanceType]
	return price, ok
}

// OnDemandPrice is the hourly on-demand price of instanceType.
func (p *Provider) OnDemandPrice(instanceType string) (float64, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	price, ok := p.onDemand[instanceType]
	return price, ok
}

// SpotPrice is the latest hourly spot price of instanceType in zone.
func (p *Provider) SpotPrice(instanceType, zone string) (float64, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	sp, ok := p.spot[instanceType][zone]
	return sp.price, ok
}

// OnDemandSource says whether on-demand prices are the fallback table's or the Pricing API's.
func (p *Provider) OnDemandSource() Source {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.source
}

// Refresh reloads on-demand and spot prices; each keeps its previous values when its API fails.
func (p *Provider) Refresh(ctx context.Context) error {
	return errors.Join(p.RefreshOnDemand(ctx), p.RefreshSpot(ctx))
}

// Run refreshes prices now and then every interval until ctx is done, logging failures.
func (p *Provider) Run(ctx context.Context, interval time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		if err := p.Refresh(ctx); err != nil && ctx.Err() == nil {
			p.log.Error(err, "refreshing prices; keeping the previous ones", "region", p.region)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// productFilters select the on-demand SKUs of Linux instances on shared hardware without
// pre-installed software, excluding capacity-reservation SKUs.
func (p *Provider) productFilters() []pricingtypes.Filter {
	term := func(field, value string) pricingtypes.Filter {
		return pricingtypes.Filter{Type: pricingtypes.FilterTypeTermMatch, Field: aws.String(field), Value: aws.String(value)}
	}
	return []pricingtypes.Filter{
		term("regionCode", p.region),
		term("operatingSystem", "Linux"),
		term("tenancy", "Shared"),
		term("preInstalledSw", "NA"),
		term("capacitystatus", "Used"),
		term("marketoption", "OnDemand"),
	}
}

// RefreshOnDemand loads on-demand prices from the Pricing API over the fallback table. On
// failure the previous prices stay.
func (p *Provider) RefreshOnDemand(ctx context.Context) error {
	if p.pricing == nil {
		return nil
	}
	prices := map[string]float64{}
	paginator := pricing.NewGetProductsPaginator(p.pricing, &pricing.GetProductsInput{
		ServiceCode:   aws.String("AmazonEC2"),
		Filters:       p.productFilters(),
		FormatVersion: aws.String("aws_v1"),
	})
	for paginator.HasMorePages() {
		page, err := paginator.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("getting EC2 on-demand prices for %s from the Pricing API: %w", p.region, awserr.Classify(err))
		}
		for _, doc := range page.PriceList {
			instanceType, price, err := parsePriceListEntry(doc)
			if err != nil {
				p.log.V(1).Info("skipping a price list entry", "error", err.Error())
				continue
			}
			prices[instanceType] = price
		}
	}
	if len(prices) == 0 {
		return fmt.Errorf("the Pricing API returned no on-demand prices for %s", p.region)
	}
	merged := maps.Clone(fallbackOnDemand[p.region])
	if merged == nil {
		merged = map[string]float64{}
	}
	maps.Copy(merged, prices)
	p.mu.Lock()
	p.onDemand, p.source = merged, SourcePricingAPI
	p.mu.Unlock()
	p.log.V(1).Info("refreshed on-demand prices", "region", p.region, "instanceTypes", len(prices))
	return nil
}

// priceListEntry is the part of an aws_v1 price list document the provider reads.
type priceListEntry struct {
	Product struct {
		Attributes struct {
			InstanceType string `json:"instanceType"`
		} `json:"attributes"`
	} `json:"product"`
	Terms struct {
		OnDemand map[string]struct {
			PriceDimensions map[string]struct {
				Unit         string            `json:"unit"`
				PricePerUnit map[string]string `json:"pricePerUnit"`
			} `json:"priceDimensions"`
		} `json:"OnDemand"`
	} `json:"terms"`
}

func parsePriceListEntry(doc string) (string, float64, error) {
	var entry priceListEntry
	if err := json.Unmarshal([]byte(doc), &entry); err != nil {
		return "", 0, fmt.Errorf("decoding a price list entry: %w", err)
	}
	instanceType := entry.Product.Attributes.InstanceType
	if instanceType == "" {
		return "", 0, errors.New("price list entry without an instance type")
	}
	for _, term := range entry.Terms.OnDemand {
		for _, dim := range term.PriceDimensions {
			usd, ok := dim.PricePerUnit["USD"]
			if !ok || dim.Unit != "Hrs" {
				continue
			}
			price, err := strconv.ParseFloat(usd, 64)
			if err != nil {
				return "", 0, fmt.Errorf("%s: price %q: %w", instanceType, usd, err)
			}
			// Free SKUs are placeholders, not prices.
			if price > 0 {
				return instanceType, price, nil
			}
		}
	}
	return "", 0, fmt.Errorf("%s: no hourly USD on-demand price", instanceType)
}

// RefreshSpot loads the spot price in effect now for every type and zone of the region. On
// failure the previous prices stay.
func (p *Provider) RefreshSpot(ctx context.Context) error {
	if p.ec2 == nil {
		return nil
	}
	latest := map[string]map[string]spotPrice{}
	paginator := ec2.NewDescribeSpotPriceHistoryPaginator(p.ec2, &ec2.DescribeSpotPriceHistoryInput{
		// Older EC2-Classic accounts name VPC prices "Linux/UNIX (Amazon VPC)".
		ProductDescriptions: []string{string(ec2types.RIProductDescriptionLinuxUnix), string(ec2types.RIProductDescriptionLinuxUnixAmazonVpc)},
		// With StartTime now, EC2 answers the price in effect now for each type and zone (and
		// any published since).
		StartTime:  aws.Time(p.clock.Now()),
		MaxResults: aws.Int32(1000),
	})
	entries := 0
	for paginator.HasMorePages() {
		page, err := paginator.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("describing spot price history in %s: %w", p.region, awserr.Classify(err))
		}
		for _, sp := range page.SpotPriceHistory {
			entries++
			instanceType, zone := string(sp.InstanceType), aws.ToString(sp.AvailabilityZone)
			price, err := strconv.ParseFloat(aws.ToString(sp.SpotPrice), 64)
			if err != nil || instanceType == "" || zone == "" || sp.Timestamp == nil {
				p.log.V(1).Info("skipping a malformed spot price", "instanceType", instanceType, "zone", zone, "price", aws.ToString(sp.SpotPrice))
				continue
			}
			if latest[instanceType] == nil {
				latest[instanceType] = map[string]spotPrice{}
			}
			if prev, ok := latest[instanceType][zone]; !ok || sp.Timestamp.After(prev.at) {
				latest[instanceType][zone] = spotPrice{price: price, at: *sp.Timestamp}
			}
		}
	}
	p.mu.Lock()
	p.spot = latest
	p.mu.Unlock()
	p.log.V(1).Info("refreshed spot prices", "region", p.region, "instanceTypes", len(latest), "entries", entries)
	return nil
}
