package aws

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	"github.com/joinery-dev/joinery/e2e/framework"
	"github.com/joinery-dev/joinery/internal/awsemulator"
	"github.com/joinery-dev/joinery/internal/localcluster"
)

// TestValidationDryRunsAndDisableDryRun: joinery-controller proves an EC2NodeClass's launch
// permissions with EC2 dry-runs, so a withheld ec2:CreateLaunchTemplate makes
// ValidationSucceeded False with Karpenter's reason; restarted with --disable-dry-run (the
// flag DISABLE_DRY_RUN sets), it makes no dry-run and the class validates with the reason
// DryRunDisabled, the permission still withheld.
func TestValidationDryRunsAndDisableDryRun(t *testing.T) {
	aws := emulator(t)
	env.RequireLocal(t)
	if err := aws.Inject(t.Context(), awsemulator.Unauthorized.For(awsemulator.ServiceEC2, "CreateLaunchTemplate", 0)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := aws.ClearFaults(context.Background()); err != nil {
			t.Errorf("clearing faults: %v", err)
		}
	})
	pool := framework.UniqueName("dryrun")
	env.Create(t, framework.EC2NodeClasses, fmt.Sprintf(`
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: %q}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: %[2]s}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: %[2]s}}]
  role: %[3]s
`, pool, localcluster.AWSClusterName, localcluster.AWSNodeRole))
	awaitValidation(t, pool, "False", "CreateLaunchTemplateAuthCheckFailed", "UnauthorizedOperation")

	// The same controller with --disable-dry-run; the cluster's own comes back at the end.
	restartController(t, "--disable-dry-run=true")
	t.Cleanup(func() { restartController(t) })
	before, err := aws.Calls(t.Context(), awsemulator.ServiceEC2, "CreateLaunchTemplate")
	if err != nil {
		t.Fatal(err)
	}
	awaitValidation(t, pool, "True", "DryRunDisabled", "DISABLE_DRY_RUN")
	awaitNodeClassReady(t, pool)
	if after, err := aws.Calls(t.Context(), awsemulator.ServiceEC2, "CreateLaunchTemplate"); err != nil || after != before {
		t.Errorf("CreateLaunchTemplate calls went from %d to %d (%v) with DISABLE_DRY_RUN", before, after, err)
	}
}

// awaitValidation waits for the class's ValidationSucceeded condition.
func awaitValidation(t *testing.T, name, status, reason, message string) {
	t.Helper()
	framework.Eventually(t, restartTimeout, fmt.Sprintf("ec2nodeclass %s ValidationSucceeded=%s/%s", name, status, reason), func(ctx context.Context) (bool, error) {
		class, err := env.Dynamic.Resource(framework.EC2NodeClasses).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cond := condition(*class, awsv1.ConditionTypeValidationSucceeded)
		if cond == nil || cond["status"] != status || cond["reason"] != reason || !strings.Contains(fmt.Sprint(cond["message"]), message) {
			return false, fmt.Errorf("ValidationSucceeded = %v", cond)
		}
		return true, nil
	})
}

// restartController kills joinery-controller and starts it again with its usual flags and
// args, waiting until it is ready.
func restartController(t *testing.T, args ...string) {
	t.Helper()
	if err := env.Cluster.KillComponent(localcluster.JoineryController); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), restartTimeout)
	defer cancel()
	// Ready once its probes answer; it acts once the dead process's lease has expired, which
	// the callers' waits allow for.
	if err := env.Cluster.StartComponent(ctx, localcluster.JoineryController, args...); err != nil {
		t.Fatal(err)
	}
}
