package instance_test

import (
	"context"
	"fmt"
	"testing"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider/aws/instance"
	"github.com/joinery-dev/joinery/internal/awsemulator"
)

// BenchmarkLaunchBurst launches bursts of identical NodeClaims at once, as one scheduling
// decision does, and reports the EC2 calls a burst costs with and without batching.
func BenchmarkLaunchBurst(b *testing.B) {
	for _, burst := range []int{1, 10, 100} {
		for _, mode := range []struct {
			name string
			opts instance.BatchOptions
		}{
			{"batched", instance.BatchOptions{}},
			{"unbatched", instance.BatchOptions{MaxSize: 1}},
		} {
			b.Run(fmt.Sprintf("burst=%d/%s", burst, mode.name), func(b *testing.B) {
				f := newFixture(b)
				p := f.batching(mode.opts)
				if err := f.srv.SetAvailableIPs(f.subnets["us-west-2b"], 1<<30); err != nil {
					b.Fatal(err)
				}
				lt := f.template(b)
				ctx := context.Background()
				round := 0
				for b.Loop() {
					reqs := f.requests(b, burst, fmt.Sprintf("r%d", round), lt, karpv1.CapacityTypeOnDemand, []string{"c6i.large"}, []string{"us-west-2b"})
					for _, r := range launchAll(ctx, p, reqs) {
						if r.err != nil {
							b.Fatal(r.err)
						}
					}
					round++
				}
				perBurst := func(action string) float64 {
					return float64(f.srv.Calls(awsemulator.ServiceEC2, action)) / float64(round)
				}
				b.ReportMetric(perBurst("CreateFleet"), "CreateFleet/burst")
				b.ReportMetric(perBurst("CreateFleet")+perBurst("CreateTags")+perBurst("DescribeInstances"), "ec2-calls/burst")
			})
		}
	}
}
