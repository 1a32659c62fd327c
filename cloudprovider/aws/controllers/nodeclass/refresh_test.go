package nodeclass

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
)

// countingResolver counts the lookups of each part.
type countingResolver struct {
	Resolver
	calls map[string]int
}

func (r *countingResolver) Subnets(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.Subnet, error) {
	r.calls["subnets"]++
	return r.Resolver.Subnets(ctx, nc)
}

func (r *countingResolver) SecurityGroups(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.SecurityGroup, error) {
	r.calls["securityGroups"]++
	return r.Resolver.SecurityGroups(ctx, nc)
}

func (r *countingResolver) AMIs(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.AMI, error) {
	r.calls["amis"]++
	return r.Resolver.AMIs(ctx, nc)
}

func (r *countingResolver) CapacityReservations(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.CapacityReservation, error) {
	r.calls["capacityReservations"]++
	return r.Resolver.CapacityReservations(ctx, nc)
}

func (r *countingResolver) InstanceProfile(ctx context.Context, nc *awsv1.EC2NodeClass) (string, error) {
	r.calls["instanceProfile"]++
	return r.Resolver.InstanceProfile(ctx, nc)
}

// TestRefreshIntervals: AMIs are resolved again every AMIRefreshInterval, subnets and security
// groups every SubnetRefreshInterval, the rest every ResyncInterval, and the requeue is the
// next part's refresh; a user's annotation or a spec change resolves everything at once.
func TestRefreshIntervals(t *testing.T) {
	resolver := &countingResolver{Resolver: &stubResolver{subnets: []awsv1.Subnet{{ID: "subnet-1", Zone: "us-west-2a"}}}, calls: map[string]int{}}
	c, ctl := newFixtureWith(t, resolver, Options{
		AMIRefreshInterval: 2 * time.Minute, SubnetRefreshInterval: 10 * time.Minute, ResyncInterval: 30 * time.Minute,
	})
	clk := ctl.clock.(*clocktesting.FakePassiveClock)
	start := clk.Now()
	counts := func(amis, subnets, others int) map[string]int {
		return map[string]int{"amis": amis, "subnets": subnets, "securityGroups": subnets, "capacityReservations": others, "instanceProfile": others}
	}
	steps := []struct {
		name        string
		at          time.Duration // since the first reconcile
		edit        func(*awsv1.EC2NodeClass)
		wantCalls   map[string]int // in total
		wantRequeue time.Duration
	}{
		{name: "first reconcile resolves everything", wantCalls: counts(1, 1, 1), wantRequeue: 2 * time.Minute},
		{name: "a reconcile before anything is due resolves nothing", at: time.Minute, wantCalls: counts(1, 1, 1), wantRequeue: time.Minute},
		{name: "the AMI interval passed", at: 2 * time.Minute, wantCalls: counts(2, 1, 1), wantRequeue: 2 * time.Minute},
		{name: "the AMI and subnet intervals passed", at: 10 * time.Minute, wantCalls: counts(3, 2, 1), wantRequeue: 2 * time.Minute},
		{name: "the resync interval passed", at: 30 * time.Minute, wantCalls: counts(4, 3, 2), wantRequeue: 2 * time.Minute},
		{
			name: "kubectl annotate resolves everything now", at: 31 * time.Minute,
			edit:      func(nc *awsv1.EC2NodeClass) { nc.Annotations["example.com/refresh"] = "1" },
			wantCalls: counts(5, 4, 3), wantRequeue: 2 * time.Minute,
		},
		{
			name: "a spec change resolves everything now", at: 32 * time.Minute,
			edit:      func(nc *awsv1.EC2NodeClass) { nc.Spec.Tags = map[string]string{"team": "a"} },
			wantCalls: counts(6, 5, 4), wantRequeue: 2 * time.Minute,
		},
	}
	for _, step := range steps {
		clk.SetTime(start.Add(step.at))
		if step.edit != nil {
			nc := &awsv1.EC2NodeClass{}
			if err := c.Get(t.Context(), client.ObjectKey{Name: "default"}, nc); err != nil {
				t.Fatal(err)
			}
			step.edit(nc)
			if nc.Spec.Tags != nil {
				nc.Generation++ // the fake client does not bump it
			}
			if err := c.Update(t.Context(), nc); err != nil {
				t.Fatal(err)
			}
		}
		_, res := reconcileOnce(t, c, ctl)
		if diff := cmp.Diff(step.wantCalls, resolver.calls); diff != "" {
			t.Errorf("%s: lookups (-want +got):\n%s", step.name, diff)
		}
		if res.RequeueAfter != step.wantRequeue {
			t.Errorf("%s: requeue after %v, want %v", step.name, res.RequeueAfter, step.wantRequeue)
		}
	}
}
