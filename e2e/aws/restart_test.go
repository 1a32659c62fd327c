package aws

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joinery-dev/joinery/e2e/framework"
	"github.com/joinery-dev/joinery/internal/awsemulator"
	"github.com/joinery-dev/joinery/internal/localcluster"
)

// restartTimeout bounds bringing joinery-controller back: the new process waits for the dead
// leader's 15 s lease to expire before it acts.
const restartTimeout = 2 * time.Minute

// TestControllerKilledAfterCreateFleetLeavesOneInstance: joinery-controller dies after EC2
// launched the instance but before it heard so (the CreateFleet answer is held back), so the
// NodeClaim never got its provider ID. The restarted controller launches again with the same
// idempotency token and adopts the instance: exactly one instance, none leaked.
func TestControllerKilledAfterCreateFleetLeavesOneInstance(t *testing.T) {
	aws := emulator(t)
	env.RequireLocal(t)
	pool := framework.UniqueName("restart")
	createNodeClass(t, pool)
	createNodePool(t, pool, pool, `{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}`)
	if err := aws.DelayResponses(t.Context(), awsemulator.ServiceEC2, "CreateFleet", time.Minute, 1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := aws.ClearResponseDelays(context.Background()); err != nil {
			t.Errorf("clearing response delays: %v", err)
		}
	})
	ns := env.Namespace(t)
	createPods(t, ns, pool, 1, "1")

	var launched awsemulator.Instance
	framework.Eventually(t, runningTimeout, "an instance for NodePool "+pool, func(context.Context) (bool, error) {
		instances := instancesOf(t, pool)
		if len(instances) == 0 {
			return false, fmt.Errorf("none yet")
		}
		launched = instances[0]
		return true, nil
	})
	if err := env.Cluster.KillComponent(localcluster.JoineryController); err != nil {
		t.Fatal(err)
	}
	claims, err := env.Dynamic.Resource(framework.NodeClaims).List(t.Context(), metav1.ListOptions{LabelSelector: "karpenter.sh/nodepool=" + pool})
	if err != nil {
		t.Fatal(err)
	}
	if len(claims.Items) != 1 {
		t.Fatalf("%d NodeClaims when the controller died, want 1", len(claims.Items))
	}
	if id := nodeClaimField(claims.Items[0], "status", "providerID"); id != "" {
		t.Fatalf("NodeClaim has provider ID %s although CreateFleet's answer was held back", id)
	}

	ctx, cancel := context.WithTimeout(t.Context(), restartTimeout)
	defer cancel()
	if err := env.Cluster.StartComponent(ctx, localcluster.JoineryController); err != nil {
		t.Fatal(err)
	}
	env.AwaitPods(t, ns, groupLabel+"="+pool, 1, restartTimeout, running)
	nc := nodeClaimsOf(t, pool, 1)[0]
	if got := nodeClaimField(nc, "status", "providerID"); got != providerID(launched) {
		t.Errorf("NodeClaim provider ID %s, want the instance launched before the crash, %s", got, providerID(launched))
	}
	if instances := instancesOf(t, pool); len(instances) != 1 || instances[0].State != awsemulator.InstanceStateRunning {
		t.Errorf("instances %+v, want only the one launched before the crash, running", instances)
	}
}
