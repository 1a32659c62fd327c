package solver

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/simulation"
)

// gpuClaim asks for count NVIDIA GPUs of model (all the node's when count is 0).
func gpuClaim(name, model string, count int64) *resourceapi.ResourceClaim {
	req := resourceapi.ExactDeviceRequest{
		DeviceClassName: cloudprovider.NVIDIAGPUDriver,
		Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: fmt.Sprintf(`device.attributes["gpu.nvidia.com"].productName == %q`, model),
		}}},
		AllocationMode: resourceapi.DeviceAllocationModeExactCount,
		Count:          count,
	}
	if count == 0 {
		req.AllocationMode, req.Count = resourceapi.DeviceAllocationModeAll, 0
	}
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{Name: "gpus", Exactly: &req}},
		}},
	}
}

func claiming(claim string) podOption {
	return func(p *corev1.Pod) {
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, corev1.PodResourceClaim{Name: "gpu", ResourceClaimName: &claim})
		p.Spec.Containers[0].Resources.Claims = append(p.Spec.Containers[0].Resources.Claims, corev1.ResourceClaim{Name: "gpu"})
	}
}

// planWithClaims plans batch, again until DynamicResources has seen the claims: they reach
// it through an assume cache that the informer fills after its own cache has synced.
func planWithClaims(t testing.TB, s *testSolver, batch []*corev1.Pod) *simulation.Plan {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		plan, err := s.Plan(t.Context(), batch)
		if err != nil {
			t.Fatal(err)
		}
		missing := false
		for _, why := range plan.Unschedulable {
			missing = missing || strings.Contains(why, "could not find ResourceClaim")
		}
		if !missing || time.Now().After(deadline) {
			return plan
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestResourceClaimsNarrowTheTypes: a pod's resource claims get a NodeClaim whose every type
// has the devices (the type launched is one of them), and a claim no type can satisfy leaves
// the pod unschedulable with DynamicResources' reason.
func TestResourceClaimsNarrowTheTypes(t *testing.T) {
	objects := []runtime.Object{
		&resourceapi.DeviceClass{
			ObjectMeta: metav1.ObjectMeta{Name: cloudprovider.NVIDIAGPUDriver},
			Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
				CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "gpu.nvidia.com"`},
			}}},
		},
		gpuClaim("two-a10g", "a10g", 2),
		gpuClaim("one-l4", "l4", 1),
		gpuClaim("all-t4g", "t4g", 0),
		gpuClaim("sixteen-h100", "h100", 16),
	}
	for _, tc := range []struct {
		claim  string
		model  string
		min    int64
		ignore bool
		// types, if any, are the only ones the NodePool allows.
		types []string
		// unschedulable: no type has the devices.
		unschedulable bool
		// spotUnavailable: every spot offering is recorded unavailable (the solver copies
		// the types to mark them; the copies keep their devices).
		spotUnavailable bool
	}{
		{claim: "two-a10g", model: "a10g", min: 2},
		{claim: "one-l4", model: "l4", min: 1},
		{claim: "all-t4g", model: "t4g", min: 1},
		{claim: "sixteen-h100", unschedulable: true},
		// A NodePool of types without devices says so, in DynamicResources' name.
		{claim: "one-l4", types: []string{"c5.large", "m5.large"}, unschedulable: true},
		// IGNORE_DRA_REQUESTS: the claim is left to the scheduler, as Karpenter does.
		{claim: "sixteen-h100", ignore: true},
		{claim: "two-a10g", model: "a10g", min: 2, spotUnavailable: true},
	} {
		t.Run(fmt.Sprintf("%s ignore=%v types=%v spot-unavailable=%v", tc.claim, tc.ignore, tc.types, tc.spotUnavailable), func(t *testing.T) {
			np := nodePool("default")
			if len(tc.types) > 0 {
				np = nodePool("default", requiring(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, nil, tc.types...))
			}
			state := &StaticState{NodePoolList: []*karpv1.NodePool{np}}
			its := kwokTypes(t)
			s := newTestSolverWith(t, state, its, objects, func(o *Options) {
				o.IgnoreDRARequests = tc.ignore
				if tc.spotUnavailable {
					o.Unavailable = func(capacityType, _, _ string) bool { return capacityType == karpv1.CapacityTypeSpot }
				}
			})
			batch := []*corev1.Pod{testPod("gpu", "1", "1Gi", claiming(tc.claim)), testPod("plain", "1", "1Gi")}
			plan := planWithClaims(t, s, batch)
			if tc.unschedulable {
				why, ok := plan.Unschedulable[batch[0].UID]
				if !ok || !strings.Contains(why, "DynamicResources") {
					t.Fatalf("pod with claim %s: unschedulable %q (%v), want DynamicResources' reason", tc.claim, why, ok)
				}
				return
			}
			if len(plan.Unschedulable) > 0 {
				t.Fatalf("unschedulable: %v", plan.Unschedulable)
			}
			byName := map[string]*cloudprovider.InstanceType{}
			for _, it := range its {
				byName[it.Name] = it
			}
			for _, c := range plan.NewNodeClaims {
				holdsGPU := false
				for _, p := range c.Pods {
					holdsGPU = holdsGPU || p.UID == batch[0].UID
				}
				if !holdsGPU || tc.ignore {
					continue
				}
				names := instanceTypes(c.NodeClaim)
				if len(names) == 0 {
					t.Fatal("the NodeClaim of the pod with the claim lists no instance type")
				}
				for _, name := range names {
					devices := byName[name].Devices
					if len(devices) != 1 || devices[0].Model != tc.model || devices[0].Count < tc.min {
						t.Errorf("NodeClaim for claim %s lists %s with devices %+v, want >= %d %s", tc.claim, name, devices, tc.min, tc.model)
					}
				}
			}
		})
	}
}
