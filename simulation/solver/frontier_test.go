package solver

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/joinery-dev/joinery/cloudprovider"
)

// A claim's frontier answers whether some type holds the requests exactly as a scan of every
// type does, when computed and after commits narrow the types to those holding the claim's
// growing requests (keepFrontier). Types tie on cpu, memory and pods, and some carry GPUs.
func TestFrontierAnswersAsEveryType(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 5))
			randVec := func(scale int64) vec {
				v := vec{milliCPU: scale * (1 + rng.Int64N(8)) * 500, memory: scale * (1 + rng.Int64N(8)) << 29, pods: 1 + rng.Int64N(scale*4)}
				if rng.IntN(4) == 0 {
					v.other = corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(rng.Int64N(3), resource.DecimalSI)}
				}
				return v
			}
			alloc := allocatables{}
			var its cloudprovider.InstanceTypes
			for range 60 {
				it := &cloudprovider.InstanceType{}
				alloc[it] = randVec(16)
				its = append(its, it)
			}
			r := &run{alloc: alloc}
			c := &claim{its: its}
			check := func(step string) {
				t.Helper()
				for range 200 {
					req := c.requests.plus(randVec(4))
					if got, want := anyHolds(r.frontierOf(c), req), alloc.anyFits(c.its, req); got != want {
						t.Fatalf("%s: requests %+v: frontier %v, every type %v", step, req, got, want)
					}
				}
			}
			check("computed")
			for i := range 6 {
				prev := c.its
				c.requests = c.requests.plus(randVec(1))
				c.its = alloc.fitting(prev, c.requests)
				c.keepFrontier(prev)
				if len(c.its) > 0 && !c.frontierFor(c.its) {
					t.Fatalf("commit %d: the frontier was not kept", i)
				}
				check(fmt.Sprintf("after commit %d (%d types)", i, len(c.its)))
			}
		})
	}
}
