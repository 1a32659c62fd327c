package instancetype_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"slices"
	"testing"
	"time"

	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/aws/awserr"
	"github.com/joinery-dev/joinery/cloudprovider/aws/catalogdata"
	"github.com/joinery-dev/joinery/cloudprovider/aws/instancetype"
	"github.com/joinery-dev/joinery/cloudprovider/aws/pricing"
	"github.com/joinery-dev/joinery/internal/awsemulator"
	"github.com/joinery-dev/joinery/scheduling"
)

func offering(it *cloudprovider.InstanceType, capacityType, zone string) *cloudprovider.Offering {
	for _, o := range it.Offerings {
		if o.CapacityType() == capacityType && o.Zone() == zone {
			return o
		}
	}
	return nil
}

func TestEveryCatalogTypeIsListedAcrossPages(t *testing.T) {
	e := newEnv(t)
	its, err := e.provider(t, instancetype.Options{}).List(context.Background(), e.resolvedClass(), instancetype.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := len(catalogdata.All()); len(its) != want {
		t.Errorf("listed %d types, want all %d of the catalog", len(its), want)
	}
	// 100 types per DescribeInstanceTypes page, as the paginator asks.
	if got, want := e.srv.Calls(awsemulator.ServiceEC2, "DescribeInstanceTypes"), (len(catalogdata.All())+99)/100; got != want {
		t.Errorf("DescribeInstanceTypes called %d times, want %d pages", got, want)
	}
	for _, it := range its {
		if len(it.Offerings) == 0 || !it.Offerings.HasCompatible(scheduling.NewRequirements()) {
			t.Errorf("%s has no available offering", it.Name)
		}
	}
}

func TestOfferingsStayInTheClassZones(t *testing.T) {
	e := newEnv(t)
	class := e.resolvedClass("us-west-2a", "us-west-2c")
	its, err := e.provider(t, instancetype.Options{}).List(context.Background(), class, instancetype.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	types := byName(its)
	for _, it := range its {
		for _, o := range it.Offerings {
			if z := o.Zone(); z != "us-west-2a" && z != "us-west-2c" {
				t.Fatalf("%s offered in %s, outside the class's subnets", it.Name, z)
			}
		}
	}
	m5 := types["m5.large"]
	if got := m5.Requirements.Get(corev1.LabelTopologyZone).Values(); len(got) != 2 {
		t.Errorf("m5.large zones = %v", got)
	}
	if got := m5.Requirements.Get(awsv1.LabelTopologyZoneID).Values(); len(got) != 2 || got[0] != "usw2-az2" || got[1] != "usw2-az3" {
		t.Errorf("m5.large zone ids = %v, want [usw2-az2 usw2-az3]", got)
	}
	if o := offering(m5, karpv1.CapacityTypeOnDemand, "us-west-2c"); o == nil || o.Requirements.Get(awsv1.LabelTopologyZoneID).Any() != "usw2-az3" {
		t.Errorf("on-demand offering in us-west-2c lacks its zone id: %v", o)
	}
	// Graviton4 is not offered in the c zones, so only us-west-2a remains.
	if got := types["m8g.large"].Requirements.Get(corev1.LabelTopologyZone).Values(); len(got) != 1 || got[0] != "us-west-2a" {
		t.Errorf("m8g.large zones = %v, want [us-west-2a]", got)
	}
	// p4d lives in us-west-2a and b only.
	if p4d := types["p4d.24xlarge"]; p4d == nil || len(p4d.Offerings) != 2 {
		t.Errorf("p4d.24xlarge offerings = %v, want on-demand and spot in us-west-2a", p4d)
	}

	onlyD := e.resolvedClass("us-west-2d")
	its, err = e.provider(t, instancetype.Options{}).List(context.Background(), onlyD, instancetype.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := byName(its)["g5.xlarge"]; ok {
		t.Error("g5.xlarge listed for a class whose only zone does not offer it")
	}

	e.srv.RemoveOffering("m5.large", "us-west-2a")
	p := e.provider(t, instancetype.Options{})
	its, err = p.List(context.Background(), class, instancetype.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := byName(its)["m5.large"].Requirements.Get(corev1.LabelTopologyZone).Values(); len(got) != 1 || got[0] != "us-west-2c" {
		t.Errorf("after removing the us-west-2a offering m5.large zones = %v", got)
	}
}

func TestPricesOfOfferings(t *testing.T) {
	e := newEnv(t)
	e.srv.SetSpotPrice("m5.large", "us-west-2b", 0.0299, time.Now().Add(-time.Second))
	if err := e.prices.RefreshSpot(context.Background()); err != nil {
		t.Fatal(err)
	}
	its, err := e.provider(t, instancetype.Options{}).List(context.Background(), e.resolvedClass(), instancetype.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m5 := byName(its)["m5.large"]
	if o := offering(m5, karpv1.CapacityTypeOnDemand, "us-west-2a"); o == nil || o.Price != 0.096 {
		t.Errorf("on-demand m5.large = %v, want 0.096", o)
	}
	if o := offering(m5, karpv1.CapacityTypeSpot, "us-west-2b"); o == nil || o.Price != 0.0299 {
		t.Errorf("spot m5.large in us-west-2b = %v, want the latest 0.0299", o)
	}
	for _, it := range its {
		for _, o := range it.Offerings {
			if o.CapacityType() != karpv1.CapacityTypeSpot {
				continue
			}
			onDemand := offering(it, karpv1.CapacityTypeOnDemand, o.Zone())
			if onDemand == nil || o.Price >= onDemand.Price || o.Price <= 0 {
				t.Fatalf("%s spot in %s at %v against on-demand %v", it.Name, o.Zone(), o.Price, onDemand)
			}
		}
	}
}

func TestReservedOfferings(t *testing.T) {
	e := newEnv(t)
	class := e.resolvedClass("us-west-2a", "us-west-2b")
	class.Status.CapacityReservations = []awsv1.CapacityReservation{
		{ID: "cr-open", InstanceType: "m5.large", AvailabilityZone: "us-west-2a", OwnerID: "111122223333", InstanceMatchCriteria: "open"},
		{ID: "cr-full", InstanceType: "m5.large", AvailabilityZone: "us-west-2b", OwnerID: "111122223333", InstanceMatchCriteria: "targeted"},
		{ID: "cr-block", InstanceType: "p5.48xlarge", AvailabilityZone: "us-west-2a", OwnerID: "111122223333", InstanceMatchCriteria: "targeted",
			ReservationType: awsv1.CapacityReservationTypeCapacityBlock, State: awsv1.CapacityReservationStateExpiring},
		// The class has no subnet in us-west-2c, so this reservation cannot be used.
		{ID: "cr-elsewhere", InstanceType: "c5.large", AvailabilityZone: "us-west-2c", OwnerID: "111122223333", InstanceMatchCriteria: "open"},
	}
	its, err := e.provider(t, instancetype.Options{}).List(context.Background(), class, instancetype.ListOptions{
		ReservationCapacity: map[string]int{"cr-open": 3, "cr-full": 0},
	})
	if err != nil {
		t.Fatal(err)
	}
	types := byName(its)
	m5 := types["m5.large"]
	open := offering(m5, karpv1.CapacityTypeReserved, "us-west-2a")
	if open == nil || !open.Available || open.ReservationID() != "cr-open" || open.ReservationCapacity != 3 {
		t.Fatalf("reserved offering in us-west-2a = %+v", open)
	}
	if got := open.Requirements.Get(awsv1.LabelCapacityReservationType).Any(); got != "default" {
		t.Errorf("reservation type = %q, want default", got)
	}
	spot := offering(m5, karpv1.CapacityTypeSpot, "us-west-2a")
	if open.Price >= spot.Price/100 {
		t.Errorf("reserved price %v is not far below spot %v", open.Price, spot.Price)
	}
	// The specification's factor (seed 002): on-demand / 10 000 000.
	onDemand := offering(m5, karpv1.CapacityTypeOnDemand, "us-west-2a")
	if want := onDemand.Price / 1e7; math.Abs(open.Price-want) > want*1e-9 {
		t.Errorf("reserved price %v, want on-demand %v / 10^7 = %v", open.Price, onDemand.Price, want)
	}
	if _, preferred := (cloudprovider.InstanceTypes{m5}).LaunchOffering(scheduling.NewRequirements(), nil); preferred != open {
		t.Errorf("preferred offering = %+v, want the reservation", preferred)
	}
	if full := offering(m5, karpv1.CapacityTypeReserved, "us-west-2b"); full == nil || full.Available {
		t.Errorf("a reservation without capacity must be listed unavailable: %+v", full)
	}
	// Asking for a reservation id narrows m5.large to that offering.
	wantReservation := scheduling.NewRequirements(scheduling.NewRequirement(awsv1.LabelCapacityReservationID, corev1.NodeSelectorOpIn, "cr-open"))
	if got := m5.Offerings.Available().Compatible(wantReservation); len(got) != 1 || got[0] != open {
		t.Errorf("offerings for cr-open = %v", got)
	}
	if block := offering(types["p5.48xlarge"], karpv1.CapacityTypeReserved, "us-west-2a"); block == nil || block.Available ||
		block.Requirements.Get(awsv1.LabelCapacityReservationType).Any() != "capacity-block" {
		t.Errorf("an expiring capacity block must be listed unavailable with its type: %+v", block)
	}
	if o := offering(types["c5.large"], karpv1.CapacityTypeReserved, "us-west-2c"); o != nil {
		t.Errorf("reservation outside the class's zones offered: %+v", o)
	}
	if got := m5.Requirements.Get(karpv1.CapacityTypeLabelKey).Values(); len(got) != 3 {
		t.Errorf("m5.large capacity types = %v, want on-demand, reserved and spot", got)
	}
}

// TestReservedCapacityGateOff: with Karpenter's ReservedCapacity gate off the class's
// reservations give no offering, so none is launched into or priced.
func TestReservedCapacityGateOff(t *testing.T) {
	e := newEnv(t)
	class := e.resolvedClass("us-west-2a")
	class.Status.CapacityReservations = []awsv1.CapacityReservation{
		{ID: "cr-open", InstanceType: "m5.large", AvailabilityZone: "us-west-2a", OwnerID: "111122223333", InstanceMatchCriteria: "open"},
	}
	its, err := e.provider(t, instancetype.Options{DisableReservedCapacity: true}).List(context.Background(), class, instancetype.ListOptions{
		ReservationCapacity: map[string]int{"cr-open": 3},
	})
	if err != nil {
		t.Fatal(err)
	}
	m5 := byName(its)["m5.large"]
	if o := offering(m5, karpv1.CapacityTypeReserved, "us-west-2a"); o != nil {
		t.Errorf("reserved offering listed with the gate off: %+v", o)
	}
	if m5.Requirements.Get(karpv1.CapacityTypeLabelKey).Has(karpv1.CapacityTypeReserved) {
		t.Errorf("m5.large capacity types %v include reserved with the gate off", m5.Requirements.Get(karpv1.CapacityTypeLabelKey).Values())
	}
	if offering(m5, karpv1.CapacityTypeOnDemand, "us-west-2a") == nil {
		t.Error("on-demand offering missing")
	}
}

func TestUnavailableOfferings(t *testing.T) {
	e := newEnv(t)
	until := time.Now().Add(cloudprovider.UnavailableOfferingsTTL)
	its, err := e.provider(t, instancetype.Options{}).List(context.Background(), e.resolvedClass(), instancetype.ListOptions{
		Unavailable: map[cloudprovider.OfferingKey]time.Time{
			{CapacityType: karpv1.CapacityTypeSpot, InstanceType: "m5.large", Zone: "us-west-2a"}: until,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	m5 := byName(its)["m5.large"]
	if o := offering(m5, karpv1.CapacityTypeSpot, "us-west-2a"); o == nil || o.Available {
		t.Errorf("spot m5.large in us-west-2a = %+v, want listed but unavailable", o)
	}
	for _, o := range m5.Offerings {
		if (o.CapacityType() != karpv1.CapacityTypeSpot || o.Zone() != "us-west-2a") && !o.Available {
			t.Errorf("%s %s should stay available", o.CapacityType(), o.Zone())
		}
	}
	spotIn2a := scheduling.NewRequirements(
		scheduling.NewRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeSpot),
		scheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "us-west-2a"),
	)
	if m5.CompatibleWith(spotIn2a) {
		t.Error("m5.large must not be compatible with spot in us-west-2a while that offering is unavailable")
	}
}

func TestAMIRequirementsFilterTypes(t *testing.T) {
	e := newEnv(t)
	class := e.resolvedClass()
	class.Status.AMIs = []awsv1.AMI{amiReq("arm64")}
	its, err := e.provider(t, instancetype.Options{}).List(context.Background(), class, instancetype.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(its) < 100 {
		t.Fatalf("%d arm64 types, want the Graviton families", len(its))
	}
	for _, it := range its {
		if label(it, corev1.LabelArchStable) != "arm64" {
			t.Fatalf("%s (%s) listed for an arm64-only class", it.Name, label(it, corev1.LabelArchStable))
		}
	}

	// A GPU AMI variant requires a GPU; the standard one forbids it.
	class.Status.AMIs = []awsv1.AMI{{ID: "ami-nvidia", Requirements: []corev1.NodeSelectorRequirement{
		{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
		{Key: awsv1.LabelInstanceGPUManufacturer, Operator: corev1.NodeSelectorOpIn, Values: []string{"nvidia"}},
	}}}
	its, err = e.provider(t, instancetype.Options{}).List(context.Background(), class, instancetype.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range its {
		if label(it, awsv1.LabelInstanceGPUManufacturer) != "nvidia" {
			t.Fatalf("%s listed for an NVIDIA-only AMI", it.Name)
		}
	}
	if len(its) == 0 {
		t.Fatal("no NVIDIA types")
	}

	// The resolver's standard variant of an alias forbids GPUs and accelerators.
	class.Status.AMIs = []awsv1.AMI{{ID: "ami-standard", Requirements: []corev1.NodeSelectorRequirement{
		{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
		{Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpDoesNotExist},
		{Key: awsv1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpDoesNotExist},
	}}}
	its, err = e.provider(t, instancetype.Options{}).List(context.Background(), class, instancetype.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	types := byName(its)
	for _, name := range []string{"g5.xlarge", "p4d.24xlarge", "inf2.xlarge", "trn1.2xlarge", "g4ad.xlarge"} {
		if _, ok := types[name]; ok {
			t.Errorf("%s listed for an AMI without GPU or accelerator support", name)
		}
	}
	if _, ok := types["m5.large"]; !ok {
		t.Error("m5.large missing for the standard AMI")
	}
}

func TestUnresolvedClassIsNotReady(t *testing.T) {
	e := newEnv(t)
	p := e.provider(t, instancetype.Options{})
	for name, mutate := range map[string]func(*awsv1.EC2NodeClass){
		"no subnets": func(c *awsv1.EC2NodeClass) { c.Status.Subnets = nil },
		"no AMIs":    func(c *awsv1.EC2NodeClass) { c.Status.AMIs = nil },
	} {
		class := e.resolvedClass()
		mutate(class)
		if _, err := p.List(context.Background(), class, instancetype.ListOptions{}); !cloudprovider.IsNodeClassNotReadyError(err) {
			t.Errorf("%s: err = %v, want NodeClassNotReady", name, err)
		}
	}
}

func TestThrottledThenRecovered(t *testing.T) {
	e := newEnv(t)
	class := e.resolvedClass()
	p := e.provider(t, instancetype.Options{})

	// Throttled beyond the SDK's three attempts: nothing is loaded yet, so List fails.
	e.srv.Inject(awsemulator.Throttling.For(awsemulator.ServiceEC2, "DescribeInstanceTypes", 0))
	_, err := p.List(context.Background(), class, instancetype.ListOptions{})
	if !errors.Is(err, awserr.ErrThrottled) || !errors.Is(err, instancetype.ErrNotLoaded) {
		t.Fatalf("err = %v, want throttled and not loaded", err)
	}
	if got := e.srv.Calls(awsemulator.ServiceEC2, "DescribeInstanceTypes"); got != 3 {
		t.Errorf("DescribeInstanceTypes called %d times, want the SDK's 3 attempts", got)
	}

	// Recovered: the next List loads.
	e.srv.ClearFaults()
	its, err := p.List(context.Background(), class, instancetype.ListOptions{})
	if err != nil || len(its) == 0 {
		t.Fatalf("after recovery: %d types, err %v", len(its), err)
	}

	// Throttled again while loaded: Refresh fails and the loaded types stay in use.
	e.srv.Inject(awsemulator.Throttling.For(awsemulator.ServiceEC2, "DescribeInstanceTypeOfferings", 0))
	if err := p.Refresh(context.Background()); !errors.Is(err, awserr.ErrThrottled) {
		t.Fatalf("refresh err = %v, want throttled", err)
	}
	again, err := p.List(context.Background(), class, instancetype.ListOptions{})
	if err != nil || len(again) != len(its) {
		t.Errorf("while throttled: %d types (err %v), want the %d loaded before", len(again), err, len(its))
	}

	// Throttled twice only: the SDK's retries absorb it.
	e.srv.ClearFaults()
	e.srv.Inject(awsemulator.Throttling.For(awsemulator.ServiceEC2, "DescribeInstanceTypes", 2))
	if err := p.Refresh(context.Background()); err != nil {
		t.Errorf("two throttles are retried by the SDK: %v", err)
	}
}

func TestUnauthorizedIsNotRetried(t *testing.T) {
	e := newEnv(t)
	e.srv.Inject(awsemulator.Unauthorized.For(awsemulator.ServiceEC2, "DescribeInstanceTypes", 0))
	err := e.provider(t, instancetype.Options{}).Refresh(context.Background())
	if !errors.Is(err, awserr.ErrUnauthorized) {
		t.Fatalf("err = %v, want unauthorized", err)
	}
	if got := e.srv.Calls(awsemulator.ServiceEC2, "DescribeInstanceTypes"); got != 1 {
		t.Errorf("DescribeInstanceTypes called %d times, want 1", got)
	}
}

func TestOnDemandOfferingsUseTheFallbackWhenPricingIsDenied(t *testing.T) {
	e := newEnv(t)
	e.srv.SetOnDemandPrice("m5.large", 0.5) // what the Pricing API would answer
	e.srv.Inject(awsemulator.Fault{Service: awsemulator.ServicePricing, Action: "GetProducts", Code: "AccessDeniedException", Status: http.StatusBadRequest})
	pricingClient := awspricing.NewFromConfig(e.cfg)
	prices := pricing.New(pricingClient, e.ec2, pricing.Options{Region: e.srv.Region})
	if err := prices.Refresh(context.Background()); !errors.Is(err, awserr.ErrUnauthorized) {
		t.Fatalf("refresh err = %v, want unauthorized", err)
	}
	its, err := instancetype.New(e.ec2, prices, instancetype.Options{Region: e.srv.Region}).List(context.Background(), e.resolvedClass(), instancetype.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range its {
		o := offering(it, karpv1.CapacityTypeOnDemand, "us-west-2a")
		if o == nil {
			continue
		}
		want, _ := catalogdata.Lookup(it.Name)
		if math.Abs(o.Price-want.OnDemandUSD) > 1e-9 {
			t.Fatalf("%s on-demand %v, want the fallback list price %v", it.Name, o.Price, want.OnDemandUSD)
		}
	}
	// Spot prices came through: the denial was the Pricing API's only.
	if o := offering(byName(its)["m5.large"], karpv1.CapacityTypeSpot, "us-west-2a"); o == nil || !o.Available {
		t.Errorf("spot m5.large = %+v", o)
	}
}

// TestZonesAway: a zone under a zonal shift (named by ARC's zone ID) keeps its offerings
// listed, but none is available, whatever the capacity type; the other zones are untouched.
func TestZonesAway(t *testing.T) {
	e := newEnv(t)
	noZoneIDs := e.resolvedClass()
	for i := range noZoneIDs.Status.Subnets {
		noZoneIDs.Status.Subnets[i].ZoneID = ""
	}
	cases := []struct {
		name  string
		class *awsv1.EC2NodeClass
		away  sets.Set[string]
		// unavailable are the zones whose every offering must be unavailable.
		unavailable []string
	}{
		{name: "no shift: every zone available", class: e.resolvedClass()},
		{name: "the zone ID of us-west-2a", class: e.resolvedClass(), away: sets.New("usw2-az2"), unavailable: []string{"us-west-2a"}},
		{name: "two zones", class: e.resolvedClass(), away: sets.New("usw2-az2", "usw2-az3"), unavailable: []string{"us-west-2a", "us-west-2c"}},
		{name: "a zone the class has no subnet in changes nothing", class: e.resolvedClass("us-west-2a", "us-west-2b"), away: sets.New("usw2-az3")},
		{name: "subnets without zone IDs match the zone's name", class: noZoneIDs, away: sets.New("us-west-2b"), unavailable: []string{"us-west-2b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			its, err := e.provider(t, instancetype.Options{}).List(context.Background(), tc.class, instancetype.ListOptions{ZonesAway: tc.away})
			if err != nil {
				t.Fatal(err)
			}
			m5 := byName(its)["m5.large"]
			zones := sets.New[string]()
			for _, o := range m5.Offerings {
				zones.Insert(o.Zone())
				if want := !slices.Contains(tc.unavailable, o.Zone()); o.Available != want {
					t.Errorf("%s %s available = %v, want %v", o.CapacityType(), o.Zone(), o.Available, want)
				}
			}
			for _, z := range tc.unavailable {
				if !zones.Has(z) {
					t.Errorf("no offering listed in %s: a shifted zone's offerings stay listed", z)
				}
				in := scheduling.NewRequirements(scheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, z))
				if m5.CompatibleWith(in) {
					t.Errorf("m5.large is compatible with %s while traffic is shifted away from it", z)
				}
			}
		})
	}
}
