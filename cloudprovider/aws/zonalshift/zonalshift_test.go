package zonalshift

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	arctypes "github.com/aws/aws-sdk-go-v2/service/arczonalshift/types"
	"github.com/aws/smithy-go"
	"k8s.io/apimachinery/pkg/util/sets"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/joinery-dev/joinery/cloudprovider/aws/awserr"
)

// fakeARC answers ListZonalShifts with its shifts, two to a page, or with err.
type fakeARC struct {
	shifts []arctypes.ZonalShiftSummary
	err    error
	asked  []arctypes.ZonalShiftStatus
}

func (f *fakeARC) ListZonalShifts(_ context.Context, in *arczonalshift.ListZonalShiftsInput, _ ...func(*arczonalshift.Options)) (*arczonalshift.ListZonalShiftsOutput, error) {
	if f.err != nil {
		return nil, f.err
	}
	f.asked = append(f.asked, in.Status)
	start := 0
	if in.NextToken != nil {
		start = int(aws.ToString(in.NextToken)[0] - '0')
	}
	end := min(start+2, len(f.shifts))
	out := &arczonalshift.ListZonalShiftsOutput{Items: f.shifts[start:end]}
	if end < len(f.shifts) {
		out.NextToken = aws.String(string(rune('0' + end)))
	}
	return out, nil
}

const clusterARN = "arn:aws:eks:us-west-2:111122223333:cluster/prod"

func shift(resource, zone string, status arctypes.ZonalShiftStatus, expiry time.Time) arctypes.ZonalShiftSummary {
	return arctypes.ZonalShiftSummary{ResourceIdentifier: aws.String(resource), AwayFrom: aws.String(zone), Status: status, ExpiryTime: aws.Time(expiry)}
}

func TestAwayFrom(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	later := now.Add(time.Hour)
	cases := []struct {
		name   string
		shifts []arctypes.ZonalShiftSummary
		want   []string
	}{
		{name: "no shift", want: []string{}},
		{name: "an active shift of the cluster", shifts: []arctypes.ZonalShiftSummary{shift(clusterARN, "usw2-az1", arctypes.ZonalShiftStatusActive, later)}, want: []string{"usw2-az1"}},
		{name: "shifts of other resources do not count", shifts: []arctypes.ZonalShiftSummary{
			shift("arn:aws:eks:us-west-2:111122223333:cluster/staging", "usw2-az1", arctypes.ZonalShiftStatusActive, later),
			shift("arn:aws:eks:us-east-1:111122223333:cluster/prod", "use1-az1", arctypes.ZonalShiftStatusActive, later),
			shift("arn:aws:elasticloadbalancing:us-west-2:111122223333:loadbalancer/app/prod/0123", "usw2-az2", arctypes.ZonalShiftStatusActive, later),
			shift("prod", "usw2-az3", arctypes.ZonalShiftStatusActive, later),
		}, want: []string{}},
		{name: "cancelled and expired shifts do not count", shifts: []arctypes.ZonalShiftSummary{
			shift(clusterARN, "usw2-az1", arctypes.ZonalShiftStatusCanceled, later),
			shift(clusterARN, "usw2-az2", arctypes.ZonalShiftStatusExpired, now.Add(-time.Minute)),
			shift(clusterARN, "usw2-az3", arctypes.ZonalShiftStatusActive, now.Add(-time.Second)), // listed active, already past its expiry
		}, want: []string{}},
		{name: "every page is read", shifts: []arctypes.ZonalShiftSummary{
			shift(clusterARN, "usw2-az1", arctypes.ZonalShiftStatusActive, later),
			shift("arn:aws:eks:us-west-2:111122223333:cluster/staging", "usw2-az2", arctypes.ZonalShiftStatusActive, later),
			shift(clusterARN, "usw2-az4", arctypes.ZonalShiftStatusActive, later),
		}, want: []string{"usw2-az1", "usw2-az4"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			api := &fakeARC{shifts: tc.shifts}
			w := New(api, Options{ClusterName: "prod", Region: "us-west-2", Clock: clocktesting.NewFakePassiveClock(now)})
			if err := w.Refresh(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := sets.List(w.AwayFrom()); !slices.Equal(got, tc.want) {
				t.Errorf("AwayFrom = %v, want %v", got, tc.want)
			}
			for _, status := range api.asked {
				if status != arctypes.ZonalShiftStatusActive {
					t.Errorf("listed shifts of status %q, want only ACTIVE ones", status)
				}
			}
		})
	}
}

// TestShiftEndsWithoutARefresh: a shift stops counting at its expiry even when ARC cannot be
// reached since; a failed refresh keeps what was listed before.
func TestShiftEndsWithoutARefresh(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(now)
	api := &fakeARC{shifts: []arctypes.ZonalShiftSummary{shift(clusterARN, "usw2-az1", arctypes.ZonalShiftStatusActive, now.Add(30*time.Minute))}}
	w := New(api, Options{ClusterName: "prod", Region: "us-west-2", Clock: clk})
	if err := w.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	api.err = &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "not allowed"}
	err := w.Refresh(context.Background())
	if !errors.Is(err, awserr.ErrUnauthorized) {
		t.Errorf("Refresh = %v, want a classified authorization error", err)
	}
	if !w.AwayFrom().Has("usw2-az1") {
		t.Error("a failed refresh dropped the active shift")
	}
	clk.SetTime(now.Add(30 * time.Minute))
	if got := w.AwayFrom(); got.Len() != 0 {
		t.Errorf("AwayFrom at the shift's expiry = %v, want none", sets.List(got))
	}
}
