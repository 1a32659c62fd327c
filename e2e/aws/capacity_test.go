package aws

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/e2e/framework"
	"github.com/joinery-dev/joinery/internal/awsemulator"
)

// TestInsufficientCapacityLaunchesTheNextOffering: EC2 refuses the cheapest offering a
// NodePool allows; joinery launches the next one, records the refused offering in the
// unavailable-offerings ConfigMap for three minutes, and plans later capacity without it.
func TestInsufficientCapacityLaunchesTheNextOffering(t *testing.T) {
	aws := emulator(t)
	const (
		cheapest, next = "m5.large", "m5.xlarge"
		zone           = "us-west-2a"
	)
	refused := cloudprovider.OfferingKey{CapacityType: awsemulator.CapacityTypeOnDemand, InstanceType: cheapest, Zone: zone}
	if err := aws.SetInsufficientCapacity(t.Context(), refused.CapacityType, refused.InstanceType, refused.Zone); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := aws.ClearInsufficientCapacity(context.Background(), refused.CapacityType, refused.InstanceType, refused.Zone); err != nil {
			t.Errorf("clearing the insufficient capacity: %v", err)
		}
	})
	pool := framework.UniqueName("ice")
	createNodeClass(t, pool)
	createNodePool(t, pool, pool,
		`{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}`,
		fmt.Sprintf(`{key: node.kubernetes.io/instance-type, operator: In, values: [%s, %s]}`, cheapest, next),
		fmt.Sprintf(`{key: topology.kubernetes.io/zone, operator: In, values: [%s]}`, zone))
	ns := env.Namespace(t)
	createPods(t, ns, pool, 1, "1")
	env.AwaitPods(t, ns, groupLabel+"="+pool, 1, runningTimeout, running)

	instances := live(instancesOf(t, pool))
	if len(instances) != 1 || instances[0].InstanceType != next || instances[0].Zone != zone {
		t.Fatalf("instances %+v, want one %s in %s after %s was refused", instances, next, zone, cheapest)
	}
	until, ok := unavailableOfferings(t)[refused.ConfigMapKey()]
	if !ok {
		t.Fatalf("%s is not in ConfigMap %s: %v", refused.ConfigMapKey(), cloudprovider.UnavailableOfferingsConfigMap, unavailableOfferings(t))
	}
	expiry, err := time.Parse(time.RFC3339, until)
	if err != nil {
		t.Fatalf("entry %s=%q: %v", refused.ConfigMapKey(), until, err)
	}
	if left := time.Until(expiry); left <= 0 || left > cloudprovider.UnavailableOfferingsTTL {
		t.Errorf("%s is unavailable for another %s, want within the %s TTL", refused.ConfigMapKey(), left.Round(time.Second), cloudprovider.UnavailableOfferingsTTL)
	}

	// Capacity planned while the record holds leaves the refused offering out: a second
	// NodePool with the same choice gets a NodeClaim that does not allow it.
	second := pool + "-b"
	createNodePool(t, second, pool,
		`{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}`,
		fmt.Sprintf(`{key: node.kubernetes.io/instance-type, operator: In, values: [%s, %s]}`, cheapest, next),
		fmt.Sprintf(`{key: topology.kubernetes.io/zone, operator: In, values: [%s]}`, zone))
	createPods(t, ns, second, 1, "1")
	env.AwaitPods(t, ns, groupLabel+"="+second, 1, runningTimeout, running)
	nc := nodeClaimsOf(t, second, 1)[0]
	if allows(nc, corev1.LabelInstanceTypeStable, cheapest) && allows(nc, corev1.LabelTopologyZone, zone) {
		t.Errorf("NodeClaim %s planned while %s is recorded unavailable still allows it", nc.GetName(), refused.ConfigMapKey())
	}
	if instances := live(instancesOf(t, second)); len(instances) != 1 || instances[0].InstanceType != next {
		t.Errorf("instances of the second NodePool %+v, want one %s", instances, next)
	}
}

// allows reports whether the NodeClaim's requirement on key admits value (no requirement
// admits every value).
func allows(nc unstructured.Unstructured, key, value string) bool {
	reqs, _, _ := unstructured.NestedSlice(nc.Object, "spec", "requirements")
	for _, r := range reqs {
		req, _ := r.(map[string]any)
		if req["key"] != key {
			continue
		}
		values, _, _ := unstructured.NestedStringSlice(req, "values")
		switch req["operator"] {
		case "In":
			return slices.Contains(values, value)
		case "NotIn":
			return !slices.Contains(values, value)
		}
	}
	return true
}

// TestThrottledCreateFleetConverges: CreateFleet is throttled for longer than the SDK's own
// retries; the launch fails, is retried by the controller, and the pod runs all the same,
// on exactly one instance.
func TestThrottledCreateFleetConverges(t *testing.T) {
	aws := emulator(t)
	// The class first, so that its validation's dry-run of CreateFleet is not the call throttled.
	pool := framework.UniqueName("throttle")
	createNodeClass(t, pool)
	before, err := aws.Calls(t.Context(), awsemulator.ServiceEC2, "CreateFleet")
	if err != nil {
		t.Fatal(err)
	}
	// The SDK tries each call 3 times: 4 throttles fail one launch outright and the next
	// launch's first attempt.
	const throttles = 4
	if err := aws.Inject(t.Context(), awsemulator.Throttling.For(awsemulator.ServiceEC2, "CreateFleet", throttles)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := aws.ClearFaults(context.Background()); err != nil {
			t.Errorf("clearing faults: %v", err)
		}
	})
	createNodePool(t, pool, pool, `{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}`)
	ns := env.Namespace(t)
	createPods(t, ns, pool, 1, "1")
	env.AwaitPods(t, ns, groupLabel+"="+pool, 1, runningTimeout, running)
	nodeClaimsOf(t, pool, 1)

	after, err := aws.Calls(t.Context(), awsemulator.ServiceEC2, "CreateFleet")
	if err != nil {
		t.Fatal(err)
	}
	if calls := after - before; calls < throttles+1 {
		t.Errorf("%d CreateFleet calls, want the %d throttled ones and a successful one", calls, throttles)
	}
	if instances := instancesOf(t, pool); len(instances) != 1 {
		t.Errorf("%d instances after throttled launches, want 1: %+v", len(instances), instances)
	}
}
