package integration

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"k8s.io/apimachinery/pkg/api/meta"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	ncctrl "github.com/joinery-dev/joinery/cloudprovider/aws/controllers/nodeclass"
	ncaws "github.com/joinery-dev/joinery/cloudprovider/aws/nodeclass"
	"github.com/joinery-dev/joinery/internal/awsemulator"
)

// TestValidationDryRuns runs the launch dry-runs through the SDK against the emulator, which
// answers DryRunOperation to an authorized caller and UnauthorizedOperation where a fault
// withholds a permission. DISABLE_DRY_RUN makes no dry-run call and says so in the condition.
func TestValidationDryRuns(t *testing.T) {
	tests := []struct {
		name          string
		disableDryRun bool
		denied        string // the EC2 action the caller may not call
		wantStatus    string
		wantReason    string
		wantMessage   string
		wantDryRuns   bool
	}{
		{name: "every launch call allowed", wantStatus: "True", wantReason: awsv1.ConditionTypeValidationSucceeded, wantDryRuns: true},
		{
			name: "CreateFleet denied", denied: "CreateFleet", wantStatus: "False", wantReason: "CreateFleetAuthCheckFailed",
			wantMessage: "UnauthorizedOperation", wantDryRuns: true,
		},
		{
			name: "RunInstances denied", denied: "RunInstances", wantStatus: "False", wantReason: "RunInstancesAuthCheckFailed",
			wantMessage: "UnauthorizedOperation", wantDryRuns: true,
		},
		{
			name: "DISABLE_DRY_RUN skips them, even denied", disableDryRun: true, denied: "CreateFleet",
			wantStatus: "True", wantReason: ncctrl.ReasonDryRunDisabled, wantMessage: "DISABLE_DRY_RUN",
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startWith(t, func(cfg aws.Config, o *ncctrl.Options) {
				o.DryRun = ncaws.NewDryRun(ec2.NewFromConfig(cfg), awsemulator.DefaultClusterName).Check
				o.DisableDryRun = tt.disableDryRun
			})
			if tt.denied != "" {
				e.srv.Inject(awsemulator.Unauthorized.For(awsemulator.ServiceEC2, tt.denied, 0))
			}
			name := "validated-" + string(rune('a'+i))
			e.create(t, class(name, nil))
			nc := e.waitForClass(t, name, "ValidationSucceeded="+tt.wantStatus, conditionIs(awsv1.ConditionTypeValidationSucceeded, tt.wantStatus, tt.wantReason))
			cond := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypeValidationSucceeded)
			if !strings.Contains(cond.Message, tt.wantMessage) {
				t.Errorf("ValidationSucceeded message %q does not mention %q", cond.Message, tt.wantMessage)
			}
			if !conditionIs(awsv1.ConditionTypeReady, tt.wantStatus, "")(nc) {
				t.Errorf("Ready = %+v, want %s", meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypeReady), tt.wantStatus)
			}
			calls := 0
			for _, action := range []string{"CreateLaunchTemplate", "CreateFleet", "RunInstances"} {
				calls += e.srv.Calls(awsemulator.ServiceEC2, action)
			}
			if (calls > 0) != tt.wantDryRuns {
				t.Errorf("%d dry-run calls, want some: %v", calls, tt.wantDryRuns)
			}
			if len(e.srv.Instances()) != 0 || len(e.srv.LaunchTemplates()) != 0 {
				t.Errorf("a dry-run made something: instances %+v, launch templates %+v", e.srv.Instances(), e.srv.LaunchTemplates())
			}
			if tt.wantStatus == "False" {
				e.waitForEvent(t, name, tt.wantReason)
			}
		})
	}
}
