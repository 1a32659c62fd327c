package pricing_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/go-logr/logr/testr"

	"github.com/joinery-dev/joinery/cloudprovider/aws/awserr"
	"github.com/joinery-dev/joinery/cloudprovider/aws/catalogdata"
	"github.com/joinery-dev/joinery/cloudprovider/aws/pricing"
	"github.com/joinery-dev/joinery/internal/awsemulator"
)

// noBackoff keeps the SDK's retry decisions and attempt count but not its sleeps.
type noBackoff struct{ aws.Retryer }

func (noBackoff) RetryDelay(int, error) (time.Duration, error) { return 0, nil }

func newProvider(t *testing.T, srv *awsemulator.Server) *pricing.Provider {
	t.Helper()
	cfg := srv.Config()
	pricingClient := awspricing.NewFromConfig(cfg, func(o *awspricing.Options) { o.Retryer = noBackoff{o.Retryer} })
	ec2Client := ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.Retryer = noBackoff{o.Retryer} })
	return pricing.New(pricingClient, ec2Client, pricing.Options{Region: srv.Region, Logger: testr.New(t)})
}

var (
	pricingThrottled = awsemulator.Fault{Service: awsemulator.ServicePricing, Action: "GetProducts", Code: "ThrottlingException", Message: "Rate exceeded", Status: http.StatusBadRequest}
	pricingDenied    = awsemulator.Fault{Service: awsemulator.ServicePricing, Action: "GetProducts", Code: "AccessDeniedException", Message: "not authorized to perform pricing:GetProducts", Status: http.StatusBadRequest}
)

func TestOnDemandPricesComeFromThePricingAPI(t *testing.T) {
	srv := awsemulator.NewServer(awsemulator.Options{})
	defer srv.Close()
	srv.SetOnDemandPrice("m5.large", 0.5) // differs from the fallback's 0.096
	p := newProvider(t, srv)
	if got, _ := p.OnDemandPrice("m5.large"); got != 0.096 || p.OnDemandSource() != pricing.SourceFallback {
		t.Fatalf("before refresh: m5.large = %v from %s, want the fallback's 0.096", got, p.OnDemandSource())
	}
	if err := p.RefreshOnDemand(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, _ := p.OnDemandPrice("m5.large"); got != 0.5 || p.OnDemandSource() != pricing.SourcePricingAPI {
		t.Errorf("m5.large = %v from %s, want the Pricing API's 0.5", got, p.OnDemandSource())
	}
	if got, _ := p.OnDemandPrice("p4d.24xlarge"); got != 32.7726 {
		t.Errorf("p4d.24xlarge = %v, want 32.7726", got)
	}
	if got := srv.Calls(awsemulator.ServicePricing, "GetProducts"); got < 6 {
		t.Errorf("GetProducts called %d times, want one per page of 100 over 500+ types", got)
	}
}

func TestOnDemandFallsBackWhenThePricingAPIFails(t *testing.T) {
	tests := []struct {
		name      string
		fault     awsemulator.Fault
		wantKind  error
		wantCalls int
	}{
		{name: "throttled on every attempt", fault: pricingThrottled, wantKind: awserr.ErrThrottled, wantCalls: 3},
		{name: "access denied is not retried", fault: pricingDenied, wantKind: awserr.ErrUnauthorized, wantCalls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := awsemulator.NewServer(awsemulator.Options{})
			defer srv.Close()
			srv.SetOnDemandPrice("m5.large", 0.5)
			srv.Inject(tt.fault)
			p := newProvider(t, srv)
			err := p.RefreshOnDemand(context.Background())
			if !errors.Is(err, tt.wantKind) {
				t.Fatalf("err = %v, want %v", err, tt.wantKind)
			}
			if got := srv.Calls(awsemulator.ServicePricing, "GetProducts"); got != tt.wantCalls {
				t.Errorf("GetProducts calls = %d, want %d", got, tt.wantCalls)
			}
			if got, ok := p.OnDemandPrice("m5.large"); !ok || got != 0.096 || p.OnDemandSource() != pricing.SourceFallback {
				t.Errorf("m5.large = %v (%v) from %s, want the fallback's 0.096", got, ok, p.OnDemandSource())
			}

			// Once the API answers its prices win; a later failure keeps them.
			srv.ClearFaults()
			if err := p.RefreshOnDemand(context.Background()); err != nil {
				t.Fatal(err)
			}
			srv.Inject(tt.fault)
			if err := p.RefreshOnDemand(context.Background()); err == nil {
				t.Fatal("want the injected failure")
			}
			if got, _ := p.OnDemandPrice("m5.large"); got != 0.5 || p.OnDemandSource() != pricing.SourcePricingAPI {
				t.Errorf("after a failed refresh m5.large = %v from %s, want the last API price 0.5", got, p.OnDemandSource())
			}
		})
	}
}

func TestThrottledOnceThenTheSDKRetries(t *testing.T) {
	srv := awsemulator.NewServer(awsemulator.Options{})
	defer srv.Close()
	srv.SetOnDemandPrice("c5.large", 0.2)
	srv.Inject(awsemulator.Fault{Service: awsemulator.ServicePricing, Action: "GetProducts", Code: "ThrottlingException", Status: http.StatusBadRequest, Times: 2})
	p := newProvider(t, srv)
	if err := p.RefreshOnDemand(context.Background()); err != nil {
		t.Fatalf("two throttles are within the SDK's three attempts: %v", err)
	}
	if got, _ := p.OnDemandPrice("c5.large"); got != 0.2 {
		t.Errorf("c5.large = %v, want 0.2", got)
	}
}

func TestSpotPricesAreTheLatestPerTypeAndZone(t *testing.T) {
	srv := awsemulator.NewServer(awsemulator.Options{})
	defer srv.Close()
	now := time.Now()
	// A stale low price and a newer one: the newer one is in effect.
	srv.SetSpotPrice("m5.large", "us-west-2a", 0.001, now.Add(-30*time.Hour))
	srv.SetSpotPrice("m5.large", "us-west-2a", 0.0311, now.Add(-time.Minute))
	p := newProvider(t, srv)
	if err := p.RefreshSpot(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, ok := p.SpotPrice("m5.large", "us-west-2a"); !ok || got != 0.0311 {
		t.Errorf("m5.large in us-west-2a = %v (%v), want the latest 0.0311", got, ok)
	}
	it, _ := catalogdata.Lookup("m5.large")
	history := it.SpotHistory("us-west-2b", catalogdata.OSLinux, time.Now())
	if len(history) < 2 {
		t.Fatal("the catalog has no spot history")
	}
	// The emulator dated its history from its own start; the latest entry's price is the same.
	if got, ok := p.SpotPrice("m5.large", "us-west-2b"); !ok || got != history[len(history)-1].Price {
		t.Errorf("m5.large in us-west-2b = %v (%v), want the newest history entry %v", got, ok, history[len(history)-1].Price)
	}
	if _, ok := p.SpotPrice("g5.xlarge", "us-west-2d"); ok {
		t.Error("g5.xlarge is not offered in us-west-2d but has a spot price")
	}
	if got, ok := p.SpotPrice("p5.48xlarge", "us-west-2a"); !ok || got >= 55.04 {
		t.Errorf("p5.48xlarge spot = %v (%v), want below on-demand", got, ok)
	}

	srv.Inject(awsemulator.Unauthorized.For(awsemulator.ServiceEC2, "DescribeSpotPriceHistory", 0))
	if err := p.RefreshSpot(context.Background()); !errors.Is(err, awserr.ErrUnauthorized) {
		t.Fatalf("err = %v, want unauthorized", err)
	}
	if got, _ := p.SpotPrice("m5.large", "us-west-2a"); got != 0.0311 {
		t.Errorf("after a denied refresh m5.large = %v, want the previous 0.0311", got)
	}
}

func TestFallbackTableMatchesTheCatalog(t *testing.T) {
	for _, region := range []string{"us-east-1", "us-west-2"} {
		for _, it := range catalogdata.All() {
			want, _ := it.OnDemandPrice(region, catalogdata.OSLinux)
			if got, ok := pricing.FallbackOnDemandPrice(region, it.Name); !ok || got != want {
				t.Errorf("%s %s: fallback %v (%v), catalog %v; run go generate ./cloudprovider/aws/pricing", region, it.Name, got, ok, want)
			}
		}
	}
}

func TestRunRefreshesUntilCancelled(t *testing.T) {
	srv := awsemulator.NewServer(awsemulator.Options{})
	defer srv.Close()
	p := newProvider(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx, 10*time.Millisecond); close(done) }()
	deadline := time.Now().Add(30 * time.Second)
	for srv.Calls(awsemulator.ServiceEC2, "DescribeSpotPriceHistory") < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	if got := srv.Calls(awsemulator.ServiceEC2, "DescribeSpotPriceHistory"); got < 2 {
		t.Errorf("spot history fetched %d times, want repeated refreshes", got)
	}
	if p.OnDemandSource() != pricing.SourcePricingAPI {
		t.Errorf("source = %s after Run", p.OnDemandSource())
	}
}
