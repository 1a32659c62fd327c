package zonalshift

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	arctypes "github.com/aws/aws-sdk-go-v2/service/arczonalshift/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/joinery-dev/joinery/cloudprovider/aws/awserr"
)

// fakeARC answers GetManagedResource for the cluster with its shifts and autoshifts, or err.
type fakeARC struct {
	shifts     []arctypes.ZonalShiftInResource
	autoshifts []arctypes.AutoshiftInResource
	err        error
	asked      []string
}

func (f *fakeARC) GetManagedResource(_ context.Context, in *arczonalshift.GetManagedResourceInput, _ ...func(*arczonalshift.Options)) (*arczonalshift.GetManagedResourceOutput, error) {
	f.asked = append(f.asked, aws.ToString(in.ResourceIdentifier))
	if f.err != nil {
		return nil, f.err
	}
	return &arczonalshift.GetManagedResourceOutput{Arn: in.ResourceIdentifier, ZonalShifts: f.shifts, Autoshifts: f.autoshifts}, nil
}

// fakeSTS names account 111122223333 in partition aws.
type fakeSTS struct{ calls int }

func (f *fakeSTS) GetCallerIdentity(context.Context, *sts.GetCallerIdentityInput, ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error) {
	f.calls++
	return &sts.GetCallerIdentityOutput{Account: aws.String("111122223333"), Arn: aws.String("arn:aws:sts::111122223333:assumed-role/joinery/i-0123")}, nil
}

const clusterARN = "arn:aws:eks:us-west-2:111122223333:cluster/prod"

func inResource(zone string, kind arctypes.ShiftType, expiry time.Time) arctypes.ZonalShiftInResource {
	return arctypes.ZonalShiftInResource{ResourceIdentifier: aws.String(clusterARN), AwayFrom: aws.String(zone), ShiftType: kind, ExpiryTime: aws.Time(expiry), AppliedStatus: arctypes.AppliedStatusApplied}
}

func autoshift(zone string, applied arctypes.AutoshiftAppliedStatus) arctypes.AutoshiftInResource {
	return arctypes.AutoshiftInResource{AwayFrom: aws.String(zone), AppliedStatus: applied}
}

func TestActive(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	later := now.Add(time.Hour)
	cases := []struct {
		name       string
		shifts     []arctypes.ZonalShiftInResource
		autoshifts []arctypes.AutoshiftInResource
		want       map[string]string
	}{
		{name: "no shift", want: map[string]string{}},
		{name: "a customer's shift", shifts: []arctypes.ZonalShiftInResource{inResource("usw2-az1", arctypes.ShiftTypeZonalShift, later)}, want: map[string]string{"usw2-az1": KindZonalShift}},
		{name: "a practice run", shifts: []arctypes.ZonalShiftInResource{inResource("usw2-az2", arctypes.ShiftTypePracticeRun, later)}, want: map[string]string{"usw2-az2": KindPracticeRun}},
		{name: "an autoshift counts as a customer's shift does", autoshifts: []arctypes.AutoshiftInResource{autoshift("usw2-az3", arctypes.AutoshiftAppliedStatusApplied)}, want: map[string]string{"usw2-az3": KindAutoshift}},
		{name: "an autoshift a customer's shift overrides still keeps its zone away", shifts: []arctypes.ZonalShiftInResource{inResource("usw2-az1", arctypes.ShiftTypeZonalShift, later)},
			autoshifts: []arctypes.AutoshiftInResource{autoshift("usw2-az3", arctypes.AutoshiftAppliedStatusNotApplied)}, want: map[string]string{"usw2-az1": KindZonalShift, "usw2-az3": KindAutoshift}},
		{name: "the autoshift outlasts a shift of the same zone", shifts: []arctypes.ZonalShiftInResource{inResource("usw2-az1", arctypes.ShiftTypePracticeRun, later)},
			autoshifts: []arctypes.AutoshiftInResource{autoshift("usw2-az1", arctypes.AutoshiftAppliedStatusNotApplied)}, want: map[string]string{"usw2-az1": KindAutoshift}},
		{name: "a shift already past its expiry does not count", shifts: []arctypes.ZonalShiftInResource{inResource("usw2-az1", arctypes.ShiftTypeZonalShift, now.Add(-time.Second))}, want: map[string]string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			api, id := &fakeARC{shifts: tc.shifts, autoshifts: tc.autoshifts}, &fakeSTS{}
			w := New(api, id, Options{ClusterName: "prod", Region: "us-west-2", Clock: clocktesting.NewFakePassiveClock(now)})
			if err := w.Refresh(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := w.Active(); !maps.Equal(got, tc.want) {
				t.Errorf("Active = %v, want %v", got, tc.want)
			}
			if err := w.Refresh(context.Background()); err != nil {
				t.Fatal(err)
			}
			if len(api.asked) != 2 || api.asked[0] != clusterARN || id.calls != 1 {
				t.Errorf("asked about %v with %d identity calls, want %s twice with one", api.asked, id.calls, clusterARN)
			}
		})
	}
}

// TestShiftEndsWithoutARefresh: a shift stops counting at its expiry even when ARC cannot be
// reached since; a failed refresh keeps what was read before; a cluster ARC does not manage
// has no shifts.
func TestShiftEndsWithoutARefresh(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(now)
	api := &fakeARC{shifts: []arctypes.ZonalShiftInResource{inResource("usw2-az1", arctypes.ShiftTypeZonalShift, now.Add(30*time.Minute))}, autoshifts: []arctypes.AutoshiftInResource{autoshift("usw2-az2", arctypes.AutoshiftAppliedStatusNotApplied)}}
	w := New(api, &fakeSTS{}, Options{ClusterName: "prod", Region: "us-west-2", Clock: clk})
	if err := w.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	api.err = &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "not allowed"}
	err := w.Refresh(context.Background())
	if !errors.Is(err, awserr.ErrUnauthorized) {
		t.Errorf("Refresh = %v, want a classified authorization error", err)
	}
	if !w.AwayFrom().Has("usw2-az1") || !w.AwayFrom().Has("usw2-az2") {
		t.Error("a failed refresh dropped the active shifts")
	}
	clk.SetTime(now.Add(30 * time.Minute))
	if got := w.Active(); !maps.Equal(got, map[string]string{"usw2-az2": KindAutoshift}) {
		t.Errorf("Active at the shift's expiry = %v, want only the autoshift, which has no expiry", got)
	}
	api.err = &arctypes.ResourceNotFoundException{Message: aws.String("not managed")}
	if err := w.Refresh(context.Background()); err == nil {
		t.Error("Refresh of a cluster ARC does not manage succeeded silently")
	}
	if got := w.Active(); len(got) != 0 {
		t.Errorf("Active of a cluster ARC does not manage = %v, want none", got)
	}
}

// TestZonesReturn: subscribers hear when a zone stops being shifted away from, whether its
// shift ended in ARC or expired between two refreshes; not when a shift starts.
func TestZonesReturn(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(now)
	api := &fakeARC{}
	w := New(api, &fakeSTS{}, Options{ClusterName: "prod", Region: "us-west-2", ClusterARN: clusterARN, Clock: clk})
	var heard []string
	w.OnZonesReturn(func(why string) { heard = append(heard, why) })
	refresh := func() {
		t.Helper()
		if err := w.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name       string
		shifts     []arctypes.ZonalShiftInResource
		autoshifts []arctypes.AutoshiftInResource
		advance    time.Duration
		want       []string
	}{
		{name: "shifts start", shifts: []arctypes.ZonalShiftInResource{inResource("usw2-az1", arctypes.ShiftTypeZonalShift, now.Add(10*time.Minute))},
			autoshifts: []arctypes.AutoshiftInResource{autoshift("usw2-az2", arctypes.AutoshiftAppliedStatusNotApplied)}},
		{name: "nothing changes", shifts: []arctypes.ZonalShiftInResource{inResource("usw2-az1", arctypes.ShiftTypeZonalShift, now.Add(10*time.Minute))},
			autoshifts: []arctypes.AutoshiftInResource{autoshift("usw2-az2", arctypes.AutoshiftAppliedStatusApplied)}},
		{name: "the autoshift ends", shifts: []arctypes.ZonalShiftInResource{inResource("usw2-az1", arctypes.ShiftTypeZonalShift, now.Add(10*time.Minute))},
			want: []string{"zonal shift away from usw2-az2 ended"}},
		{name: "the shift expires though ARC still lists it", shifts: []arctypes.ZonalShiftInResource{inResource("usw2-az1", arctypes.ShiftTypeZonalShift, now.Add(10*time.Minute))},
			advance: 10 * time.Minute, want: []string{"zonal shift away from usw2-az1 ended"}},
	}
	for _, step := range steps {
		heard = nil
		api.shifts, api.autoshifts = step.shifts, step.autoshifts
		clk.SetTime(clk.Now().Add(step.advance))
		refresh()
		if len(heard) != len(step.want) || len(heard) > 0 && heard[0] != step.want[0] {
			t.Errorf("%s: heard %q, want %q", step.name, heard, step.want)
		}
	}
}
