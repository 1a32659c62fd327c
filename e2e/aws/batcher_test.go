package aws

import (
	"context"
	"fmt"
	"testing"

	"github.com/joinery-dev/joinery/e2e/framework"
)

// TestCreateFleetBatcherMetrics: launching pending pods sends CreateFleet through the batcher,
// which records Karpenter's batcher metrics for it (e2e/metrics runs kwok, which batches
// nothing, so this suite checks them).
func TestCreateFleetBatcherMetrics(t *testing.T) {
	emulator(t)
	env.RequireLocal(t) // the controller's metrics
	series := []string{"karpenter_cloudprovider_batcher_batch_size_count", "karpenter_cloudprovider_batcher_batch_time_seconds_count"}
	before := map[string]float64{}
	for _, name := range series {
		v, err := env.ControllerMetric(t.Context(), name, `batcher="create_fleet"`)
		if err != nil {
			t.Fatal(err)
		}
		before[name] = v
	}
	pool := framework.UniqueName("batch")
	createNodeClass(t, pool)
	createNodePool(t, pool, pool, `{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}`)
	ns := env.Namespace(t)
	createPods(t, ns, pool, 2, "500m")
	env.AwaitPods(t, ns, groupLabel+"="+pool, 2, runningTimeout, running)
	framework.Eventually(t, runningTimeout, "a CreateFleet batch in the batcher metrics", func(ctx context.Context) (bool, error) {
		for _, name := range series {
			v, err := env.ControllerMetric(ctx, name, `batcher="create_fleet"`)
			if err != nil {
				return false, err
			}
			if v <= before[name] {
				return false, fmt.Errorf("%s = %v, as before the launch", name, v)
			}
		}
		return true, nil
	})
}
