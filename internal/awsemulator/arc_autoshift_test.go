package awsemulator

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	arctypes "github.com/aws/aws-sdk-go-v2/service/arczonalshift/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// TestAutoshiftOfTheCluster drives autoshifts through the admin API and reads them through the
// real SDK: ListAutoshifts lists the region's, and GetManagedResource shows them in the cluster
// only while its zonal autoshift is ENABLED, with a customer's shift applied over them.
func TestAutoshiftOfTheCluster(t *testing.T) {
	srv := NewServer(Options{})
	t.Cleanup(srv.Close)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	admin := NewAdminClient(hs.URL)
	ctx := context.Background()
	client := arczonalshift.NewFromConfig(srv.Config())
	cluster := aws.String(srv.ClusterARN())
	zone, other := srv.Zones()[0].ID, srv.Zones()[1].ID

	managed := func(t *testing.T) *arczonalshift.GetManagedResourceOutput {
		t.Helper()
		out, err := client.GetManagedResource(ctx, &arczonalshift.GetManagedResourceInput{ResourceIdentifier: cluster})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if err := admin.StartAutoshift(ctx, zone); err != nil {
		t.Fatal(err)
	}
	if err := admin.StartAutoshift(ctx, zone); err == nil {
		t.Error("a second active autoshift away from the same zone was accepted")
	}
	if err := admin.StartAutoshift(ctx, "us-west-2a"); err == nil {
		t.Error("an autoshift away from a zone name, not an ID, was accepted")
	}
	listed, err := client.ListAutoshifts(ctx, &arczonalshift.ListAutoshiftsInput{})
	if err != nil || len(listed.Items) != 1 || aws.ToString(listed.Items[0].AwayFrom) != zone || listed.Items[0].Status != arctypes.AutoshiftExecutionStatusActive {
		t.Fatalf("ListAutoshifts = %+v, %v: want the active autoshift away from %s", listed, err, zone)
	}
	if got := managed(t); len(got.Autoshifts) != 0 || got.ZonalAutoshiftStatus != arctypes.ZonalAutoshiftStatusDisabled {
		t.Errorf("cluster without zonal autoshift: %+v, want no autoshift applying to it", got.Autoshifts)
	}

	if _, err := client.UpdateZonalAutoshiftConfiguration(ctx, &arczonalshift.UpdateZonalAutoshiftConfigurationInput{
		ResourceIdentifier: cluster, ZonalAutoshiftStatus: arctypes.ZonalAutoshiftStatusEnabled,
	}); err != nil {
		t.Fatal(err)
	}
	got := managed(t)
	if len(got.Autoshifts) != 1 || aws.ToString(got.Autoshifts[0].AwayFrom) != zone || got.Autoshifts[0].AppliedStatus != arctypes.AutoshiftAppliedStatusApplied || got.AppliedWeights[zone] != 0 || got.AppliedWeights[other] != 1 {
		t.Errorf("cluster with zonal autoshift: autoshifts %+v, weights %v: want the autoshift applied", got.Autoshifts, got.AppliedWeights)
	}

	// A customer's shift takes precedence over the autoshift.
	shift, err := client.StartZonalShift(ctx, &arczonalshift.StartZonalShiftInput{ResourceIdentifier: cluster, AwayFrom: aws.String(other), ExpiresIn: aws.String("1h"), Comment: aws.String("c")})
	if err != nil {
		t.Fatal(err)
	}
	got = managed(t)
	if len(got.ZonalShifts) != 1 || got.ZonalShifts[0].AppliedStatus != arctypes.AppliedStatusApplied || got.ZonalShifts[0].ShiftType != arctypes.ShiftTypeZonalShift ||
		len(got.Autoshifts) != 1 || got.Autoshifts[0].AppliedStatus != arctypes.AutoshiftAppliedStatusNotApplied {
		t.Errorf("shift %+v and autoshift %+v: want the customer's shift applied, the autoshift not", got.ZonalShifts, got.Autoshifts)
	}
	if _, err := client.CancelZonalShift(ctx, &arczonalshift.CancelZonalShiftInput{ZonalShiftId: shift.ZonalShiftId}); err != nil {
		t.Fatal(err)
	}

	if err := admin.EndAutoshift(ctx, zone); err != nil {
		t.Fatal(err)
	}
	if err := admin.EndAutoshift(ctx, zone); err == nil {
		t.Error("ending an autoshift that is not active was accepted")
	}
	if got := managed(t); len(got.Autoshifts) != 0 || len(got.ZonalShifts) != 0 {
		t.Errorf("after the autoshift ended: %+v, %+v, want none", got.Autoshifts, got.ZonalShifts)
	}
	completed, err := client.ListAutoshifts(ctx, &arczonalshift.ListAutoshiftsInput{Status: arctypes.AutoshiftExecutionStatusCompleted})
	if err != nil || len(completed.Items) != 1 || completed.Items[0].EndTime == nil {
		t.Errorf("completed autoshifts %+v, %v: want the one ended", completed, err)
	}
	if _, err := client.GetManagedResource(ctx, &arczonalshift.GetManagedResourceInput{ResourceIdentifier: aws.String("arn:aws:eks:us-west-2:" + AccountID + ":cluster/other")}); apiCode(err) != "ResourceNotFoundException" {
		t.Errorf("GetManagedResource of another resource = %v, want ResourceNotFoundException", err)
	}
}

func TestGetCallerIdentity(t *testing.T) {
	srv := NewServer(Options{})
	t.Cleanup(srv.Close)
	out, err := sts.NewFromConfig(srv.Config()).GetCallerIdentity(context.Background(), &sts.GetCallerIdentityInput{})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(out.Account) != AccountID || aws.ToString(out.Arn) == "" {
		t.Errorf("caller identity %+v, want account %s", out, AccountID)
	}
}
