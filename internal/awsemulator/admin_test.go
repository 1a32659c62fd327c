package awsemulator

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"
)

// adminFixture serves srv's Handler on a listener of its own, as cmd/awsemulator does, and
// returns SDK clients and an AdminClient of that address.
func adminFixture(t *testing.T) (*Server, *AdminClient, aws.Config) {
	t.Helper()
	srv := NewServer(Options{})
	t.Cleanup(srv.Close)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	cfg := srv.Config()
	cfg.BaseEndpoint = aws.String(hs.URL)
	return srv, NewAdminClient(hs.URL), cfg
}

func apiErrorCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

func TestAdminFaults(t *testing.T) {
	cases := []struct {
		name     string
		fault    Fault
		calls    int // DescribeSubnets calls made
		wantCode string
		minTime  time.Duration
	}{
		{name: "auth failure is not retried", fault: Unauthorized.For(ServiceEC2, "DescribeSubnets", 0), calls: 1, wantCode: "UnauthorizedOperation"},
		{name: "two throttles are retried away", fault: Throttling.For(ServiceEC2, "DescribeSubnets", 2), calls: 1},
		{name: "latency only", fault: Fault{Service: ServiceEC2, Action: "DescribeSubnets", Latency: 300 * time.Millisecond, Times: 1}, calls: 1, minTime: 300 * time.Millisecond},
		{name: "another action's fault", fault: ServerError.For(ServiceEC2, "DescribeImages", 0), calls: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, admin, cfg := adminFixture(t)
			ctx := context.Background()
			if err := admin.Inject(ctx, tc.fault); err != nil {
				t.Fatal(err)
			}
			client := ec2.NewFromConfig(cfg)
			begin := time.Now()
			_, err := client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
			if got := apiErrorCode(err); got != tc.wantCode || (tc.wantCode == "" && err != nil) {
				t.Fatalf("DescribeSubnets error = %v (code %q), want code %q", err, got, tc.wantCode)
			}
			if took := time.Since(begin); took < tc.minTime {
				t.Errorf("DescribeSubnets took %s, want at least the injected %s", took, tc.minTime)
			}
			calls, err := admin.Calls(ctx, ServiceEC2, "DescribeSubnets")
			if err != nil {
				t.Fatal(err)
			}
			if want := srv.Calls(ServiceEC2, "DescribeSubnets"); calls != want || calls < tc.calls {
				t.Errorf("admin Calls = %d, server counts %d, want at least %d", calls, want, tc.calls)
			}

			if err := admin.ClearFaults(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{}); err != nil {
				t.Errorf("DescribeSubnets after ClearFaults: %v", err)
			}
		})
	}
}

func TestAdminParameters(t *testing.T) {
	srv, admin, cfg := adminFixture(t)
	ctx := context.Background()
	client := ssm.NewFromConfig(cfg)
	const name = "/test/ami"
	if err := admin.PutParameter(ctx, name, "ami-0123456789abcdef0"); err != nil {
		t.Fatal(err)
	}
	out, err := client.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if got := aws.ToString(out.Parameter.Value); got != "ami-0123456789abcdef0" {
		t.Errorf("GetParameter = %q, want the value put through the admin API", got)
	}
	if err := admin.DeleteParameter(ctx, name); err != nil {
		t.Fatal(err)
	}
	if _, ok := srv.ParameterValue(name); ok {
		t.Error("parameter still exists after DeleteParameter")
	}
	if _, err := client.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)}); apiErrorCode(err) != "ParameterNotFound" {
		t.Errorf("GetParameter after delete: %v, want ParameterNotFound", err)
	}
}

func TestAdminInsufficientCapacityAndInstances(t *testing.T) {
	srv, admin, cfg := adminFixture(t)
	ctx := context.Background()
	client := ec2.NewFromConfig(cfg)
	f := newLaunchFixture(t, srv)
	f.createTemplate(t, client, "node-lt", f.amd64)
	pools := []poolSpec{{instanceType: "m5.large", zone: "us-west-2a"}, {instanceType: "m5.xlarge", zone: "us-west-2a"}}

	if err := admin.SetInsufficientCapacity(ctx, CapacityTypeOnDemand, "m5.large", "us-west-2a"); err != nil {
		t.Fatal(err)
	}
	out, err := client.CreateFleet(ctx, f.fleetInput("node-lt", CapacityTypeOnDemand, "lowest-price", pools))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Instances) != 1 || out.Instances[0].InstanceType != "m5.xlarge" {
		t.Fatalf("CreateFleet with m5.large refused launched %+v, want m5.xlarge", out.Instances)
	}
	if len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "InsufficientInstanceCapacity" {
		t.Errorf("CreateFleet errors = %+v, want one InsufficientInstanceCapacity", out.Errors)
	}
	instances, err := admin.Instances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(instances) != 1 || instances[0].ID != out.Instances[0].InstanceIds[0] || instances[0].State != InstanceStateRunning {
		t.Fatalf("admin Instances = %+v, want the launched instance, running", instances)
	}
	if instances[0].Tags["karpenter.sh/nodeclaim"] != "default-abcde" {
		t.Errorf("instance tags = %v, want the fleet's tags", instances[0].Tags)
	}

	if err := admin.ClearInsufficientCapacity(ctx, CapacityTypeOnDemand, "m5.large", "us-west-2a"); err != nil {
		t.Fatal(err)
	}
	out, err = client.CreateFleet(ctx, f.fleetInput("node-lt", CapacityTypeOnDemand, "lowest-price", pools))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Instances) != 1 || out.Instances[0].InstanceType != "m5.large" {
		t.Errorf("CreateFleet after clearing launched %+v, want m5.large", out.Instances)
	}
}

func TestAdminRejectsBadRequests(t *testing.T) {
	_, admin, _ := adminFixture(t)
	cases := []struct {
		name, method, path, body string
		want                     int
	}{
		{"fault without code or latency", http.MethodPost, "faults", `{"service":"ec2"}`, http.StatusBadRequest},
		{"fault code without status", http.MethodPost, "faults", `{"code":"RequestLimitExceeded"}`, http.StatusBadRequest},
		{"misspelt field", http.MethodPost, "faults", `{"code":"X","status":500,"latency":5}`, http.StatusBadRequest},
		{"offering without zone", http.MethodPost, "insufficient-capacity", `{"capacityType":"spot","instanceType":"m5.large"}`, http.StatusBadRequest},
		{"parameter without name", http.MethodPut, "parameters", `{"value":"x"}`, http.StatusBadRequest},
		{"calls without action", http.MethodGet, "calls?service=ec2", ``, http.StatusBadRequest},
		{"unknown endpoint", http.MethodGet, "nothing", ``, http.StatusNotFound},
		{"health", http.MethodGet, "healthz", ``, http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, admin.URL+AdminPathPrefix+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("%s %s = %d, want %d", tc.method, tc.path, resp.StatusCode, tc.want)
			}
		})
	}
}

// A held-back CreateFleet answer: the caller gives up before hearing of the instance, which
// exists all the same; retrying with the same token returns it instead of launching another.
func TestAdminResponseDelayHoldsTheAnswerNotTheAction(t *testing.T) {
	srv, admin, cfg := adminFixture(t)
	ctx := context.Background()
	client := ec2.NewFromConfig(cfg)
	f := newLaunchFixture(t, srv)
	f.createTemplate(t, client, "node-lt", f.amd64)
	in := f.fleetInput("node-lt", CapacityTypeOnDemand, "lowest-price", []poolSpec{{instanceType: "m5.large", zone: "us-west-2a"}})
	in.ClientToken = aws.String("nodeclaim-uid-delayed")

	if err := admin.DelayResponses(ctx, ServiceEC2, "CreateFleet", time.Minute, 1); err != nil {
		t.Fatal(err)
	}
	impatient, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if _, err := client.CreateFleet(impatient, in, func(o *ec2.Options) { o.RetryMaxAttempts = 1 }); err == nil {
		t.Fatal("CreateFleet answered although its answer is held for a minute")
	}
	instances, err := admin.Instances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(instances) != 1 {
		t.Fatalf("%d instances after the unanswered CreateFleet, want the one it launched", len(instances))
	}

	out, err := client.CreateFleet(ctx, in)
	if err != nil {
		t.Fatalf("CreateFleet retried after the delay was used up: %v", err)
	}
	if len(out.Instances) != 1 || out.Instances[0].InstanceIds[0] != instances[0].ID {
		t.Errorf("retried CreateFleet answered %+v, want the instance %s of the first call", out.Instances, instances[0].ID)
	}
	if all := srv.Instances(); len(all) != 1 {
		t.Errorf("%d instances after the retry, want 1", len(all))
	}
	if err := admin.ClearResponseDelays(ctx); err != nil {
		t.Fatal(err)
	}
}
