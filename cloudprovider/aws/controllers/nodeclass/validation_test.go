package nodeclass

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/smithy-go"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	"github.com/joinery-dev/joinery/cloudprovider/aws/nodeclass"
)

// TestValidationDryRun: ValidationSucceeded follows the launch dry-runs; DISABLE_DRY_RUN skips
// them with its own reason; a dry-run that passed is not repeated for the same inputs.
func TestValidationDryRun(t *testing.T) {
	unauthorized := &smithy.GenericAPIError{Code: "UnauthorizedOperation", Message: "You are not authorized to perform this operation."}
	tests := []struct {
		name          string
		disableDryRun bool
		dryRunErr     error
		wantStatus    metav1.ConditionStatus
		wantReason    string
		wantMessage   string
		wantDryRuns   int // over two reconciles
		wantRequeue   time.Duration
	}{
		{
			name: "allowed", wantStatus: metav1.ConditionTrue, wantReason: awsv1.ConditionTypeValidationSucceeded,
			wantDryRuns: 1, wantRequeue: DefaultResyncInterval,
		},
		{
			name: "CreateFleet refused", dryRunErr: &nodeclass.DryRunDeniedError{Call: "CreateFleet", Err: unauthorized},
			wantStatus: metav1.ConditionFalse, wantReason: "CreateFleetAuthCheckFailed", wantMessage: "UnauthorizedOperation",
			wantDryRuns: 2, wantRequeue: time.Minute,
		},
		{
			name: "throttled", dryRunErr: throttled,
			wantStatus: metav1.ConditionFalse, wantReason: "Throttled", wantMessage: "RequestLimitExceeded",
			wantDryRuns: 2, wantRequeue: 15 * time.Second,
		},
		{
			name: "DISABLE_DRY_RUN", disableDryRun: true, dryRunErr: unauthorized,
			wantStatus: metav1.ConditionTrue, wantReason: ReasonDryRunDisabled, wantMessage: "DISABLE_DRY_RUN",
			wantDryRuns: 0, wantRequeue: DefaultResyncInterval,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dryRuns := 0
			resolver := &stubResolver{subnets: []awsv1.Subnet{{ID: "subnet-1", Zone: "us-west-2a"}}}
			c, ctl := newFixtureWith(t, resolver, Options{
				DisableDryRun: tt.disableDryRun,
				DryRun: func(_ context.Context, nc *awsv1.EC2NodeClass) error {
					dryRuns++
					if nc.Status.InstanceProfile == "" || len(nc.Status.AMIs) == 0 {
						t.Errorf("dry-run before the class resolved: %+v", nc.Status)
					}
					return tt.dryRunErr
				},
			})
			var nc *awsv1.EC2NodeClass
			var requeue time.Duration
			for range 2 {
				got, res := reconcileOnce(t, c, ctl)
				nc, requeue = got, res.RequeueAfter
			}
			cond := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypeValidationSucceeded)
			if cond == nil || cond.Status != tt.wantStatus || cond.Reason != tt.wantReason || !strings.Contains(cond.Message, tt.wantMessage) {
				t.Errorf("ValidationSucceeded = %+v, want %s/%s mentioning %q", cond, tt.wantStatus, tt.wantReason, tt.wantMessage)
			}
			ready := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypeReady)
			if (ready.Status == metav1.ConditionTrue) != (tt.wantStatus == metav1.ConditionTrue) {
				t.Errorf("Ready = %+v with ValidationSucceeded %s", ready, tt.wantStatus)
			}
			if dryRuns != tt.wantDryRuns {
				t.Errorf("dry-runs = %d, want %d", dryRuns, tt.wantDryRuns)
			}
			if requeue != tt.wantRequeue {
				t.Errorf("requeue after %v, want %v", requeue, tt.wantRequeue)
			}
			if tt.wantStatus == metav1.ConditionFalse {
				recorder := ctl.recorder.(*events.FakeRecorder)
				if n := len(recorder.Events); n == 0 {
					t.Errorf("no event for the failed validation")
				}
			}
		})
	}
}
