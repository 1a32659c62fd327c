package awsemulator

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"
)

func TestDescribeAvailabilityZonesThroughTheSDK(t *testing.T) {
	srv := NewServer(Options{Region: "us-east-1"})
	defer srv.Close()
	client := ec2.NewFromConfig(srv.Config())

	out, err := client.DescribeAvailabilityZones(context.Background(), &ec2.DescribeAvailabilityZonesInput{})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(out.AvailabilityZones); got != 6 {
		t.Fatalf("zones = %d, want 6", got)
	}
	if z := out.AvailabilityZones[0]; aws.ToString(z.ZoneName) != "us-east-1a" || aws.ToString(z.ZoneId) != "use1-az6" {
		t.Errorf("first zone = %s/%s", aws.ToString(z.ZoneName), aws.ToString(z.ZoneId))
	}

	filtered, err := client.DescribeAvailabilityZones(context.Background(), &ec2.DescribeAvailabilityZonesInput{
		ZoneIds: []string{"use1-az1", "use1-az2"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(filtered.AvailabilityZones); got != 2 {
		t.Errorf("filtered zones = %d, want 2", got)
	}
}

func TestFaults(t *testing.T) {
	tests := []struct {
		name      string
		fault     Fault
		wantCode  string // "" means the call succeeds
		wantCalls int
	}{
		{name: "throttled twice then succeeds: the SDK retries", fault: Throttling.For(ServiceEC2, "DescribeAvailabilityZones", 2), wantCalls: 3},
		{name: "5xx until the SDK gives up after 3 attempts", fault: ServerError.For(ServiceEC2, "DescribeAvailabilityZones", 0), wantCode: "InternalError", wantCalls: 3},
		{name: "auth failures are not retried", fault: Unauthorized.For(ServiceEC2, "DescribeAvailabilityZones", 0), wantCode: "UnauthorizedOperation", wantCalls: 1},
		{name: "a fault for another action does not apply", fault: Throttling.For(ServiceEC2, "CreateFleet", 0), wantCalls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := NewServer(Options{})
			defer srv.Close()
			srv.Inject(tt.fault)
			client := ec2.NewFromConfig(srv.Config(), func(o *ec2.Options) {
				o.Retryer = retryWithoutBackoff(o.Retryer)
			})
			_, err := client.DescribeAvailabilityZones(context.Background(), &ec2.DescribeAvailabilityZonesInput{})
			if got := errorCode(err); got != tt.wantCode {
				t.Errorf("error code = %q (%v), want %q", got, err, tt.wantCode)
			}
			if got := srv.Calls(ServiceEC2, "DescribeAvailabilityZones"); got != tt.wantCalls {
				t.Errorf("calls = %d, want %d", got, tt.wantCalls)
			}
		})
	}
}

func TestErrorFormatsPerProtocol(t *testing.T) {
	srv := NewServer(Options{})
	defer srv.Close()
	ctx := context.Background()

	srv.Inject(Fault{Service: ServiceIAM, Action: "GetInstanceProfile", Code: "NoSuchEntity", Message: "Instance Profile x cannot be found.", Status: http.StatusNotFound})
	_, err := iam.NewFromConfig(srv.Config()).GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String("x")})
	if got := errorCode(err); got != "NoSuchEntity" {
		t.Errorf("IAM error code = %q (%v), want NoSuchEntity", got, err)
	}

	srv.Inject(Fault{Service: ServiceSSM, Action: "GetParameter", Code: "ParameterNotFound", Message: "missing"})
	_, err = ssm.NewFromConfig(srv.Config()).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/x")})
	if got := errorCode(err); got != "ParameterNotFound" {
		t.Errorf("SSM error code = %q (%v), want ParameterNotFound", got, err)
	}

	_, err = ec2.NewFromConfig(srv.Config()).DescribeAddresses(ctx, &ec2.DescribeAddressesInput{})
	if got := errorCode(err); got != "InvalidAction" {
		t.Errorf("unemulated EC2 action: code = %q (%v), want InvalidAction", got, err)
	}
}

func TestLatencyFaultHonoursContext(t *testing.T) {
	srv := NewServer(Options{})
	defer srv.Close()
	srv.Inject(Fault{Service: ServiceEC2, Action: "DescribeRegions", Latency: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := ec2.NewFromConfig(srv.Config()).DescribeRegions(ctx, &ec2.DescribeRegionsInput{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the context's deadline", err)
	}
}

func errorCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	if err != nil {
		return "non-API error: " + err.Error()
	}
	return ""
}

// retryWithoutBackoff keeps the SDK's retry decisions and attempt count but not its sleeps.
func retryWithoutBackoff(r aws.Retryer) aws.Retryer { return noBackoff{r} }

type noBackoff struct{ aws.Retryer }

func (noBackoff) RetryDelay(int, error) (time.Duration, error) { return 0, nil }
