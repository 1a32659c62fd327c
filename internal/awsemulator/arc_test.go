package awsemulator

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	arctypes "github.com/aws/aws-sdk-go-v2/service/arczonalshift/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/smithy-go"
)

func activeShifts(t *testing.T, client *arczonalshift.Client) []arctypes.ZonalShiftSummary {
	t.Helper()
	out, err := client.ListZonalShifts(context.Background(), &arczonalshift.ListZonalShiftsInput{Status: arctypes.ZonalShiftStatusActive})
	if err != nil {
		t.Fatal(err)
	}
	return out.Items
}

// apiCode is the error code the SDK reports for err, or "" for an error that is not an API error.
func apiCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

// TestZonalShiftLifecycle drives ARC through the real SDK: a shift of the cluster away from a
// zone is listed active until it is cancelled or expires.
func TestZonalShiftLifecycle(t *testing.T) {
	srv := NewServer(Options{})
	t.Cleanup(srv.Close)
	now := time.Now()
	srv.mu.Lock()
	srv.now = func() time.Time { return now }
	srv.mu.Unlock()
	client := arczonalshift.NewFromConfig(srv.Config())
	ctx := context.Background()
	zone := srv.Zones()[0].ID

	started, err := client.StartZonalShift(ctx, &arczonalshift.StartZonalShiftInput{
		ResourceIdentifier: aws.String(srv.ClusterARN()), AwayFrom: aws.String(zone), ExpiresIn: aws.String("30m"), Comment: aws.String("test"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if off := aws.ToTime(started.ExpiryTime).Sub(now.Add(30 * time.Minute)); started.Status != arctypes.ZonalShiftStatusActive || aws.ToString(started.AwayFrom) != zone || off.Abs() > time.Second {
		t.Errorf("started shift %+v: want active, away from %s, expiring in 30m", started, zone)
	}
	if got := activeShifts(t, client); len(got) != 1 || aws.ToString(got[0].ResourceIdentifier) != srv.ClusterARN() {
		t.Fatalf("active shifts %+v, want the one started", got)
	}
	_, err = client.StartZonalShift(ctx, &arczonalshift.StartZonalShiftInput{
		ResourceIdentifier: aws.String(srv.ClusterARN()), AwayFrom: aws.String(srv.Zones()[1].ID), ExpiresIn: aws.String("1h"), Comment: aws.String("second"),
	})
	if apiCode(err) != "ConflictException" {
		t.Errorf("a second active shift of the resource = %v, want ConflictException", err)
	}
	if _, err := client.CancelZonalShift(ctx, &arczonalshift.CancelZonalShiftInput{ZonalShiftId: started.ZonalShiftId}); err != nil {
		t.Fatal(err)
	}
	if got := activeShifts(t, client); len(got) != 0 {
		t.Errorf("active shifts after cancelling %+v, want none", got)
	}
	all, err := client.ListZonalShifts(ctx, &arczonalshift.ListZonalShiftsInput{})
	if err != nil || len(all.Items) != 1 || all.Items[0].Status != arctypes.ZonalShiftStatusCanceled {
		t.Errorf("all shifts %+v, %v: want the cancelled one", all, err)
	}

	expiring, err := client.StartZonalShift(ctx, &arczonalshift.StartZonalShiftInput{
		ResourceIdentifier: aws.String(srv.ClusterARN()), AwayFrom: aws.String(zone), ExpiresIn: aws.String("1m"), Comment: aws.String("short"),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	srv.now = func() time.Time { return now.Add(time.Minute) }
	srv.mu.Unlock()
	if got := activeShifts(t, client); len(got) != 0 {
		t.Errorf("active shifts after the expiry %+v, want none", got)
	}
	if _, err := client.CancelZonalShift(ctx, &arczonalshift.CancelZonalShiftInput{ZonalShiftId: expiring.ZonalShiftId}); apiCode(err) != "ConflictException" {
		t.Errorf("cancelling an expired shift = %v, want ConflictException", err)
	}
}

func TestZonalShiftValidation(t *testing.T) {
	srv := NewServer(Options{})
	t.Cleanup(srv.Close)
	client := arczonalshift.NewFromConfig(srv.Config())
	cases := []struct {
		name     string
		resource string
		awayFrom string
		expires  string
		wantCode string
	}{
		{"another resource", "arn:aws:eks:us-west-2:" + AccountID + ":cluster/other", "usw2-az1", "1h", "ResourceNotFoundException"},
		{"a zone name, not an ID", srv.ClusterARN(), "us-west-2a", "1h", "ValidationException"},
		{"longer than three days", srv.ClusterARN(), "usw2-az1", "73h", "ValidationException"},
		{"no unit", srv.ClusterARN(), "usw2-az1", "30", "ValidationException"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := client.StartZonalShift(context.Background(), &arczonalshift.StartZonalShiftInput{
				ResourceIdentifier: aws.String(tc.resource), AwayFrom: aws.String(tc.awayFrom), ExpiresIn: aws.String(tc.expires), Comment: aws.String("c"),
			})
			if apiCode(err) != tc.wantCode {
				t.Errorf("StartZonalShift = %v, want %s", err, tc.wantCode)
			}
		})
	}
	if _, err := client.CancelZonalShift(context.Background(), &arczonalshift.CancelZonalShiftInput{ZonalShiftId: aws.String("nope")}); apiCode(err) != "ResourceNotFoundException" {
		t.Errorf("cancelling an unknown shift = %v, want ResourceNotFoundException", err)
	}
}

// TestListZonalShiftsPages: the SDK's paginator reads every page.
func TestListZonalShiftsPages(t *testing.T) {
	srv := NewServer(Options{})
	t.Cleanup(srv.Close)
	client := arczonalshift.NewFromConfig(srv.Config())
	ctx := context.Background()
	for range 5 {
		out, err := client.StartZonalShift(ctx, &arczonalshift.StartZonalShiftInput{
			ResourceIdentifier: aws.String(srv.ClusterARN()), AwayFrom: aws.String("usw2-az1"), ExpiresIn: aws.String("1h"), Comment: aws.String("c"),
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.CancelZonalShift(ctx, &arczonalshift.CancelZonalShiftInput{ZonalShiftId: out.ZonalShiftId}); err != nil {
			t.Fatal(err)
		}
	}
	paginator := arczonalshift.NewListZonalShiftsPaginator(client, &arczonalshift.ListZonalShiftsInput{MaxResults: aws.Int32(2)})
	n, pages := 0, 0
	for paginator.HasMorePages() {
		page, err := paginator.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n, pages = n+len(page.Items), pages+1
	}
	if n != 5 || pages != 3 {
		t.Errorf("%d shifts in %d pages, want 5 in 3", n, pages)
	}
	if got := srv.Calls(ServiceARC, "ListZonalShifts"); got != 3 {
		t.Errorf("ListZonalShifts called %d times, want 3", got)
	}
	if got := srv.CallsBy(ServiceARC, "ListZonalShifts", "AKIAJOINERYTEST"); got != 3 {
		t.Errorf("ListZonalShifts called %d times with the test's key, want 3", got)
	}
}

func TestDescribeCluster(t *testing.T) {
	srv := NewServer(Options{Cluster: EKSCluster{Name: "prod", Endpoint: "https://127.0.0.1:6443", CABundle: "Q0E=", ServiceCIDR: "10.0.0.0/24"}})
	t.Cleanup(srv.Close)
	client := eks.NewFromConfig(srv.Config())
	out, err := client.DescribeCluster(context.Background(), &eks.DescribeClusterInput{Name: aws.String("prod")})
	if err != nil {
		t.Fatal(err)
	}
	c := out.Cluster
	if aws.ToString(c.Endpoint) != "https://127.0.0.1:6443" || aws.ToString(c.CertificateAuthority.Data) != "Q0E=" ||
		aws.ToString(c.KubernetesNetworkConfig.ServiceIpv4Cidr) != "10.0.0.0/24" || c.KubernetesNetworkConfig.IpFamily != ekstypes.IpFamilyIpv4 ||
		c.Status != ekstypes.ClusterStatusActive || aws.ToString(c.Arn) != srv.ClusterARN() {
		t.Errorf("cluster %+v", c)
	}
	_, err = client.DescribeCluster(context.Background(), &eks.DescribeClusterInput{Name: aws.String("other")})
	var notFound *ekstypes.ResourceNotFoundException
	if !errors.As(err, &notFound) {
		t.Errorf("DescribeCluster of another cluster = %v, want ResourceNotFoundException", err)
	}
	srv.Inject(Fault{Code: "AccessDeniedException", Message: "denied", Status: http.StatusForbidden}.For(ServiceEKS, "DescribeCluster", 1))
	if _, err := client.DescribeCluster(context.Background(), &eks.DescribeClusterInput{Name: aws.String("prod")}); apiCode(err) != "AccessDeniedException" {
		t.Errorf("DescribeCluster with an injected fault = %v, want AccessDeniedException", err)
	}
}
