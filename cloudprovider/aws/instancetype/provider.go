package instancetype

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/sets"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/aws/awserr"
	"github.com/joinery-dev/joinery/scheduling"
)

// EC2API is the part of the EC2 client the provider uses (ec2:DescribeInstanceTypes,
// ec2:DescribeInstanceTypeOfferings).
type EC2API interface {
	DescribeInstanceTypes(ctx context.Context, in *ec2.DescribeInstanceTypesInput, optFns ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error)
	DescribeInstanceTypeOfferings(ctx context.Context, in *ec2.DescribeInstanceTypeOfferingsInput, optFns ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error)
}

// Prices are the current hourly prices of the region (see package pricing).
type Prices interface {
	OnDemandPrice(instanceType string) (float64, bool)
	SpotPrice(instanceType, zone string) (float64, bool)
}

// Options configure a Provider.
type Options struct {
	// Region the instance types are in.
	Region string
	// VMMemoryOverheadPercent is the fraction of advertised memory a node does not report;
	// cloudprovider.DefaultVMMemoryOverheadPercent when nil.
	VMMemoryOverheadPercent *float64
	// ReservedENIs are network interfaces kept from pods (Karpenter's RESERVED_ENIS), which
	// lowers the ENI-limited pod density.
	ReservedENIs int
	// DisableReservedCapacity leaves capacity reservations out of the offerings, so none is
	// launched into or priced: Karpenter's ReservedCapacity feature gate turned off.
	DisableReservedCapacity bool
	Logger                  logr.Logger
}

// Provider loads EC2's instance types and offerings and builds joinery's instance types from
// them. It is safe for concurrent use.
type Provider struct {
	ec2    EC2API
	prices Prices
	opts   Options
	log    logr.Logger

	mu       sync.RWMutex
	snapshot *snapshot
}

// snapshot is one load of the region's instance types; it is replaced whole, never modified.
type snapshot struct {
	infos []ec2types.InstanceTypeInfo // sorted by name
	// static[i] are infos[i]'s staticLabels, computed once per load.
	static []scheduling.Requirements
	// zones[instanceType] are the zones the type is offered in.
	zones map[string]sets.Set[string]
}

// New returns a provider that reads instance types through ec2API and prices from prices.
func New(ec2API EC2API, prices Prices, opts Options) *Provider {
	if opts.VMMemoryOverheadPercent == nil {
		opts.VMMemoryOverheadPercent = aws.Float64(cloudprovider.DefaultVMMemoryOverheadPercent)
	}
	return &Provider{ec2: ec2API, prices: prices, opts: opts, log: opts.Logger}
}

// Refresh reloads the region's instance types and zone offerings. On failure the previous
// load stays in use and the error says why (see awserr for its kind).
func (p *Provider) Refresh(ctx context.Context) error {
	infos, err := p.describeInstanceTypes(ctx)
	if err != nil {
		return err
	}
	zones, err := p.describeOfferings(ctx)
	if err != nil {
		return err
	}
	slices.SortFunc(infos, func(a, b ec2types.InstanceTypeInfo) int {
		switch {
		case a.InstanceType < b.InstanceType:
			return -1
		case a.InstanceType > b.InstanceType:
			return 1
		}
		return 0
	})
	static := make([]scheduling.Requirements, len(infos))
	for i := range infos {
		static[i] = staticLabels(&infos[i])
	}
	p.mu.Lock()
	p.snapshot = &snapshot{infos: infos, static: static, zones: zones}
	p.mu.Unlock()
	p.log.V(1).Info("refreshed instance types", "region", p.opts.Region, "instanceTypes", len(infos))
	return nil
}

// Run refreshes now and then every interval until ctx is done, logging failures.
func (p *Provider) Run(ctx context.Context, interval time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		if err := p.Refresh(ctx); err != nil && ctx.Err() == nil {
			p.log.Error(err, "refreshing instance types; keeping the previous ones", "region", p.opts.Region)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

func (p *Provider) describeInstanceTypes(ctx context.Context) ([]ec2types.InstanceTypeInfo, error) {
	var out []ec2types.InstanceTypeInfo
	paginator := ec2.NewDescribeInstanceTypesPaginator(p.ec2, &ec2.DescribeInstanceTypesInput{
		Filters: []ec2types.Filter{
			{Name: aws.String("supported-virtualization-type"), Values: []string{"hvm"}},
			{Name: aws.String("processor-info.supported-architecture"), Values: []string{"x86_64", "arm64"}},
		},
		MaxResults: aws.Int32(100),
	})
	for paginator.HasMorePages() {
		page, err := paginator.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing instance types in %s: %w", p.opts.Region, awserr.Classify(err))
		}
		out = append(out, page.InstanceTypes...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("describing instance types in %s: none returned", p.opts.Region)
	}
	return out, nil
}

func (p *Provider) describeOfferings(ctx context.Context) (map[string]sets.Set[string], error) {
	zones := map[string]sets.Set[string]{}
	paginator := ec2.NewDescribeInstanceTypeOfferingsPaginator(p.ec2, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZone,
		MaxResults:   aws.Int32(1000),
	})
	for paginator.HasMorePages() {
		page, err := paginator.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing instance type offerings in %s: %w", p.opts.Region, awserr.Classify(err))
		}
		for _, o := range page.InstanceTypeOfferings {
			name := string(o.InstanceType)
			if zones[name] == nil {
				zones[name] = sets.New[string]()
			}
			zones[name].Insert(aws.ToString(o.Location))
		}
	}
	return zones, nil
}

// ListOptions carry the cluster state that decides offering availability.
type ListOptions struct {
	// Unavailable are offerings recently refused for insufficient capacity (the
	// joinery-unavailable-offerings record); they are listed but not available.
	Unavailable map[cloudprovider.OfferingKey]time.Time
	// ReservationCapacity is how many more instances each capacity reservation (by id) can
	// launch. A reservation it does not list counts as having room for one.
	ReservationCapacity map[string]int
	// ZonesAway are the IDs of zones under an active zonal shift (ENABLE_ZONAL_SHIFT): their
	// offerings are listed but not available, as refused offerings are, until the shift ends.
	ZonesAway sets.Set[string]
}

// ErrNotLoaded means instance types could not be loaded yet.
var ErrNotLoaded = errors.New("instance types are not loaded")

// List returns the instance types nodeClass can launch: those an AMI of its status serves,
// offered in a zone of its subnets, each with its labels, capacity, overhead and offerings.
// Types without any offering are left out. It loads instance types on first use.
func (p *Provider) List(ctx context.Context, nodeClass *awsv1.EC2NodeClass, opts ListOptions) (cloudprovider.InstanceTypes, error) {
	p.mu.RLock()
	snap := p.snapshot
	p.mu.RUnlock()
	if snap == nil {
		if err := p.Refresh(ctx); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNotLoaded, err)
		}
		p.mu.RLock()
		snap = p.snapshot
		p.mu.RUnlock()
	}
	b, err := p.newBuilder(nodeClass, opts)
	if err != nil {
		return nil, err
	}
	out := make(cloudprovider.InstanceTypes, 0, len(snap.infos))
	for i := range snap.infos {
		info := &snap.infos[i]
		it, err := b.build(info, snap.static[i], snap.zones[string(info.InstanceType)])
		if err != nil {
			p.log.V(1).Info("skipping instance type", "instanceType", info.InstanceType, "reason", err.Error())
			continue
		}
		if it != nil {
			out = append(out, it)
		}
	}
	return out, nil
}
