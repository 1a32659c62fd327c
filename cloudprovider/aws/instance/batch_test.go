package instance_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider/aws/awserr"
	"github.com/joinery-dev/joinery/cloudprovider/aws/instance"
	"github.com/joinery-dev/joinery/cloudprovider/aws/launchtemplate"
	"github.com/joinery-dev/joinery/internal/awsemulator"
)

// never is a batch window that does not close during a test: batches there are sent by size.
const never = time.Hour

// batching replaces the fixture's provider with one batching by opts.
func (f *fixture) batching(opts instance.BatchOptions) *instance.Provider {
	f.p = instance.New(f.client, instance.Options{ClusterName: cluster, Batch: opts})
	return f.p
}

type launchResult struct {
	req      instance.LaunchRequest
	launched instance.Launched
	err      error
}

// launchAll launches reqs concurrently and returns their results in the order of reqs.
func launchAll(ctx context.Context, p *instance.Provider, reqs []instance.LaunchRequest) []launchResult {
	results := make([]launchResult, len(reqs))
	var wg sync.WaitGroup
	for i, req := range reqs {
		wg.Go(func() {
			launched, err := p.Launch(ctx, req)
			results[i] = launchResult{req: req, launched: launched, err: err}
		})
	}
	wg.Wait()
	return results
}

// requests is n requests of one shape for NodeClaims named after prefix.
func (f *fixture) requests(t testing.TB, n int, prefix, template, capacityType string, types, zones []string) []instance.LaunchRequest {
	t.Helper()
	reqs := make([]instance.LaunchRequest, n)
	for i := range reqs {
		reqs[i] = f.request(t, template, capacityType, fmt.Sprintf("%s-%02d", prefix, i), types, zones)
	}
	return reqs
}

// waitFor polls cond until it holds or a few seconds pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// unshared counts the results that record their fleet's errors.
func unshared(results []launchResult) int {
	n := 0
	for _, r := range results {
		var none *instance.NoInstanceError
		switch {
		case r.err == nil && !r.launched.ErrorsShared:
			n++
		case errors.As(r.err, &none) && !none.ErrorsShared:
			n++
		}
	}
	return n
}

func TestBatchConcurrentIdenticalLaunches(t *testing.T) {
	f := newFixture(t)
	p := f.batching(instance.BatchOptions{IdleDuration: never, MaxDuration: never, MaxSize: 10})
	ctx := context.Background()
	reqs := f.requests(t, 10, "uid", f.template(t), karpv1.CapacityTypeOnDemand, []string{"c6i.large", "m5.2xlarge"}, []string{"us-west-2b", "us-west-2c"})

	sizeBefore, sumBefore := histogram(t, instance.BatchHistograms.Size)
	timeBefore, _ := histogram(t, instance.BatchHistograms.Time)
	results := launchAll(ctx, p, reqs)
	if n := f.srv.Calls(awsemulator.ServiceEC2, "CreateFleet"); n != 1 {
		t.Errorf("%d CreateFleet calls, want 1", n)
	}
	// Karpenter's batcher metrics see the one batch of 10.
	if count, sum := histogram(t, instance.BatchHistograms.Size); count-sizeBefore != 1 || sum-sumBefore != 10 {
		t.Errorf("karpenter_cloudprovider_batcher_batch_size{batcher=create_fleet} grew by %d batches of %v launches, want 1 of 10", count-sizeBefore, sum-sumBefore)
	}
	if count, _ := histogram(t, instance.BatchHistograms.Time); count-timeBefore != 1 {
		t.Errorf("karpenter_cloudprovider_batcher_batch_time_seconds grew by %d observations, want 1", count-timeBefore)
	}
	seen := map[string]string{}
	for _, r := range results {
		if r.err != nil {
			t.Fatalf("%s: %v", r.req.ClientToken, r.err)
		}
		nodeClaim := r.req.Tags[awsv1.TagNodeClaim]
		inst := r.launched.Instance
		if other, dup := seen[inst.ID]; dup {
			t.Errorf("instance %s handed to %s and %s", inst.ID, other, nodeClaim)
		}
		seen[inst.ID] = nodeClaim
		if inst.InstanceType != "c6i.large" || inst.Zone != "us-west-2b" || inst.Tags[awsv1.TagNodeClaim] != nodeClaim {
			t.Errorf("%s launched %+v, want c6i.large in us-west-2b tagged with its nodeclaim", nodeClaim, inst)
		}
		stored, ok := f.srv.Instance(inst.ID)
		if !ok || stored.Tags[awsv1.TagNodeClaim] != nodeClaim || stored.Tags["Name"] != nodeClaim ||
			stored.Tags[awsv1.TagNodePool] != "default" || stored.Tags[instance.ClusterTag(cluster)] != "owned" {
			t.Errorf("instance %s of %s has tags %v", inst.ID, nodeClaim, stored.Tags)
		}
	}
	if n := len(f.srv.Instances()); n != 10 {
		t.Errorf("%d instances, want 10", n)
	}
	if n := unshared(results); n != 1 {
		t.Errorf("%d results record the fleet's errors, want 1", n)
	}

	// Retried, each NodeClaim finds its instance: no second fleet, no second instance.
	again := launchAll(ctx, p, reqs)
	for i, r := range again {
		if r.err != nil || r.launched.Instance.ID != results[i].launched.Instance.ID {
			t.Errorf("retry of %s: %s %v, want %s", r.req.ClientToken, r.launched.Instance.ID, r.err, results[i].launched.Instance.ID)
		}
	}
	if n := f.srv.Calls(awsemulator.ServiceEC2, "CreateFleet"); n != 1 || len(f.srv.Instances()) != 10 {
		t.Errorf("after retries: %d CreateFleet calls and %d instances, want 1 and 10", n, len(f.srv.Instances()))
	}
}

func TestBatchSeparatesShapes(t *testing.T) {
	f := newFixture(t)
	p := f.batching(instance.BatchOptions{IdleDuration: never, MaxDuration: never, MaxSize: 2})
	lt := f.template(t)
	other := f.template(t, func(s *launchtemplate.Spec) { s.UserData = "#!/bin/bash\necho other\n" })
	types, zones := []string{"c6i.large"}, []string{"us-west-2b", "us-west-2c"}
	f.srv.SetSpotPrice("c6i.large", "us-west-2b", 0.01, time.Now().Add(-time.Second))
	f.srv.SetSpotPrice("c6i.large", "us-west-2c", 0.02, time.Now().Add(-time.Second))

	var reqs []instance.LaunchRequest
	reqs = append(reqs, f.requests(t, 2, "od", lt, karpv1.CapacityTypeOnDemand, types, zones)...)
	reqs = append(reqs, f.requests(t, 2, "spot", lt, karpv1.CapacityTypeSpot, types, zones)...)
	reqs = append(reqs, f.requests(t, 2, "tmpl", other, karpv1.CapacityTypeOnDemand, types, zones)...)
	zoneC := f.requests(t, 2, "zone", lt, karpv1.CapacityTypeOnDemand, types, zones[1:])
	reqs = append(reqs, zoneC...)
	tagged := f.requests(t, 2, "team", lt, karpv1.CapacityTypeOnDemand, types, zones)
	for i := range tagged {
		tagged[i].Tags["team"] = "b"
	}
	reqs = append(reqs, tagged...)

	results := launchAll(context.Background(), p, reqs)
	if n := f.srv.Calls(awsemulator.ServiceEC2, "CreateFleet"); n != 5 {
		t.Errorf("%d CreateFleet calls, want one per shape (5)", n)
	}
	for _, r := range results {
		if r.err != nil {
			t.Fatalf("%s: %v", r.req.ClientToken, r.err)
		}
		stored, _ := f.srv.Instance(r.launched.Instance.ID)
		if stored.Lifecycle != r.req.CapacityType || r.launched.TemplateName != r.req.Templates[0].TemplateName ||
			stored.Tags["team"] != r.req.Tags["team"] || stored.Tags[awsv1.TagNodeClaim] != r.req.Tags[awsv1.TagNodeClaim] {
			t.Errorf("%s got %s (%s, template %s, tags %v), not its own shape", r.req.ClientToken, stored.ID, stored.Lifecycle, r.launched.TemplateName, stored.Tags)
		}
		if r.req.Templates[0].Overrides[0].Zone == "us-west-2c" && stored.Zone != "us-west-2c" {
			t.Errorf("%s launched in %s, want us-west-2c", r.req.ClientToken, stored.Zone)
		}
	}
}

// recordingEC2 records the CreateFleet inputs sent through the real client.
type recordingEC2 struct {
	*ec2.Client
	mu     sync.Mutex
	fleets []*ec2.CreateFleetInput
}

func (r *recordingEC2) CreateFleet(ctx context.Context, in *ec2.CreateFleetInput, optFns ...func(*ec2.Options)) (*ec2.CreateFleetOutput, error) {
	r.mu.Lock()
	r.fleets = append(r.fleets, in)
	r.mu.Unlock()
	return r.Client.CreateFleet(ctx, in, optFns...)
}

func TestBatchOfOneKeepsItsToken(t *testing.T) {
	f := newFixture(t)
	rec := &recordingEC2{Client: f.client}
	p := instance.New(rec, instance.Options{ClusterName: cluster})
	req := f.request(t, f.template(t), karpv1.CapacityTypeOnDemand, "uid-1", []string{"c6i.large"}, []string{"us-west-2b"})

	got, err := p.Launch(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.fleets) != 1 {
		t.Fatalf("%d fleets, want 1", len(rec.fleets))
	}
	in := rec.fleets[0]
	if aws.ToString(in.ClientToken) != req.ClientToken || aws.ToInt32(in.TargetCapacitySpecification.TotalTargetCapacity) != 1 {
		t.Errorf("fleet token %q capacity %d, want the NodeClaim's token %q and 1", aws.ToString(in.ClientToken),
			aws.ToInt32(in.TargetCapacitySpecification.TotalTargetCapacity), req.ClientToken)
	}
	if !hasTag(in.TagSpecifications, ec2types.ResourceTypeInstance, awsv1.TagNodeClaim, "default-uid-1") {
		t.Errorf("fleet tags %v lack the nodeclaim tag", in.TagSpecifications)
	}
	if n := f.srv.Calls(awsemulator.ServiceEC2, "CreateTags"); n != 0 {
		t.Errorf("%d CreateTags calls for a batch of one, want 0", n)
	}
	// The same fleet request again, as after a lost answer: EC2's answer, no new instance.
	replay, err := f.client.CreateFleet(context.Background(), in)
	if err != nil || len(replay.Instances) != 1 || replay.Instances[0].InstanceIds[0] != got.Instance.ID {
		t.Errorf("replayed fleet: %+v %v, want instance %s", replay, err, got.Instance.ID)
	}
	if n := len(f.srv.Instances()); n != 1 {
		t.Errorf("%d instances, want 1", n)
	}
}

func hasTag(specs []ec2types.TagSpecification, rt ec2types.ResourceType, key, value string) bool {
	for _, s := range specs {
		if s.ResourceType != rt {
			continue
		}
		for _, tag := range s.Tags {
			if aws.ToString(tag.Key) == key && aws.ToString(tag.Value) == value {
				return true
			}
		}
	}
	return false
}

func TestBatchPartialFulfilment(t *testing.T) {
	f := newFixture(t)
	p := f.batching(instance.BatchOptions{IdleDuration: never, MaxDuration: never, MaxSize: 5})
	if err := f.srv.SetAvailableIPs(f.subnets["us-west-2b"], 2); err != nil {
		t.Fatal(err)
	}
	f.srv.SetInsufficientCapacity(awsemulator.CapacityTypeOnDemand, "c6i.large", "us-west-2c")
	reqs := f.requests(t, 5, "uid", f.template(t), karpv1.CapacityTypeOnDemand, []string{"c6i.large"}, []string{"us-west-2b", "us-west-2c"})

	results := launchAll(context.Background(), p, reqs)
	launched, refused := 0, 0
	for _, r := range results {
		var none *instance.NoInstanceError
		switch {
		case r.err == nil:
			launched++
			if len(r.launched.Errors) != 1 || r.launched.Errors[0].Zone != "us-west-2c" || r.launched.Errors[0].Kind() != instance.KindCapacity {
				t.Errorf("%s: fleet errors %v, want the capacity error in us-west-2c", r.req.ClientToken, r.launched.Errors)
			}
		case errors.As(r.err, &none) && none.Only(instance.KindCapacity) && none.Errors[0].Zone == "us-west-2c":
			refused++
		default:
			t.Errorf("%s: %v, want an instance or insufficient capacity", r.req.ClientToken, r.err)
		}
	}
	if launched != 2 || refused != 3 || f.srv.Calls(awsemulator.ServiceEC2, "CreateFleet") != 1 {
		t.Errorf("%d launched, %d refused in %d fleets; want 2, 3 and 1", launched, refused, f.srv.Calls(awsemulator.ServiceEC2, "CreateFleet"))
	}
	if n := unshared(results); n != 1 {
		t.Errorf("%d results record the fleet's errors, want 1", n)
	}
}

func TestBatchFleetCallErrorReachesEveryMember(t *testing.T) {
	f := newFixture(t)
	p := f.batching(instance.BatchOptions{IdleDuration: never, MaxDuration: never, MaxSize: 3})
	f.srv.Inject(awsemulator.Unauthorized.For(awsemulator.ServiceEC2, "CreateFleet", 0))
	reqs := f.requests(t, 3, "uid", f.template(t), karpv1.CapacityTypeOnDemand, []string{"c6i.large"}, []string{"us-west-2b"})

	for _, r := range launchAll(context.Background(), p, reqs) {
		if !awserr.IsUnauthorized(r.err) {
			t.Errorf("%s: %v, want UnauthorizedOperation", r.req.ClientToken, r.err)
		}
	}
	if n := f.srv.Calls(awsemulator.ServiceEC2, "CreateFleet"); n != 1 {
		t.Errorf("%d CreateFleet calls, want 1", n)
	}
}

func TestBatchMemberCancelledBeforeSend(t *testing.T) {
	f := newFixture(t)
	p := f.batching(instance.BatchOptions{IdleDuration: never, MaxDuration: never, MaxSize: 10})
	reqs := f.requests(t, 11, "uid", f.template(t), karpv1.CapacityTypeOnDemand, []string{"c6i.large"}, []string{"us-west-2b"})
	quitter, stayers := reqs[0], reqs[1:]

	ctx, cancel := context.WithCancel(context.Background())
	quit := make(chan error, 1)
	go func() {
		_, err := p.Launch(ctx, quitter)
		quit <- err
	}()
	first := make(chan []launchResult, 1)
	go func() { first <- launchAll(context.Background(), p, stayers[:8]) }()
	waitFor(t, "nine launches in the batch", func() bool { return instance.PendingLaunches(p) == 9 })
	cancel()
	if err := <-quit; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled launch: %v, want context.Canceled", err)
	}
	if n := instance.PendingLaunches(p); n != 8 {
		t.Errorf("%d launches pending after the cancellation, want 8", n)
	}
	// Two more fill the batch to ten, which sends it.
	last := launchAll(context.Background(), p, stayers[8:])
	results := append(<-first, last...)
	for _, r := range results {
		if r.err != nil {
			t.Errorf("%s: %v", r.req.ClientToken, r.err)
		}
	}
	if n, m := f.srv.Calls(awsemulator.ServiceEC2, "CreateFleet"), len(f.srv.Instances()); n != 1 || m != 10 {
		t.Errorf("%d CreateFleet calls and %d instances, want 1 and 10", n, m)
	}
	for _, inst := range f.srv.Instances() {
		if inst.Tags[awsv1.TagNodeClaim] == quitter.Tags[awsv1.TagNodeClaim] {
			t.Errorf("instance %s launched for the cancelled launch", inst.ID)
		}
	}
}

func TestBatchMemberCancelledInFlight(t *testing.T) {
	f := newFixture(t)
	p := f.batching(instance.BatchOptions{IdleDuration: never, MaxDuration: never, MaxSize: 3})
	f.srv.Inject(awsemulator.Fault{Latency: 200 * time.Millisecond}.For(awsemulator.ServiceEC2, "CreateFleet", 1))
	reqs := f.requests(t, 3, "uid", f.template(t), karpv1.CapacityTypeOnDemand, []string{"c6i.large"}, []string{"us-west-2b"})

	ctx, cancel := context.WithCancel(context.Background())
	quit := make(chan error, 1)
	go func() {
		_, err := p.Launch(ctx, reqs[0])
		quit <- err
	}()
	waitFor(t, "the first launch in the batch", func() bool { return instance.PendingLaunches(p) == 1 })
	others := make(chan []launchResult, 1)
	go func() { others <- launchAll(context.Background(), p, reqs[1:]) }()
	waitFor(t, "the fleet request", func() bool { return f.srv.Calls(awsemulator.ServiceEC2, "CreateFleet") == 1 })
	cancel()
	if err := <-quit; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled launch: %v, want context.Canceled", err)
	}
	for _, r := range <-others {
		if r.err != nil {
			t.Errorf("%s: %v", r.req.ClientToken, r.err)
		}
	}
	// The abandoned launch's instance was still tagged with its NodeClaim: its retry, here by
	// a restarted controller, gets it.
	waitFor(t, "three tagged instances", func() bool { return f.srv.Calls(awsemulator.ServiceEC2, "CreateTags") == 3 })
	restarted := instance.New(f.client, instance.Options{ClusterName: cluster})
	retried, err := restarted.Launch(context.Background(), reqs[0])
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := f.srv.Instance(retried.Instance.ID)
	if stored.Tags[awsv1.TagNodeClaim] != reqs[0].Tags[awsv1.TagNodeClaim] || len(f.srv.Instances()) != 3 || f.srv.Calls(awsemulator.ServiceEC2, "CreateFleet") != 1 {
		t.Errorf("retry got %s tagged %v; %d instances, %d fleets; want its own instance, 3 and 1",
			stored.ID, stored.Tags, len(f.srv.Instances()), f.srv.Calls(awsemulator.ServiceEC2, "CreateFleet"))
	}
}

// An instance whose NodeClaim tag never arrived (the tagging failed, or the controller died)
// is still listed, by its NodePool tag, so that garbage collection can terminate it.
func TestBatchUntaggedInstanceIsListed(t *testing.T) {
	f := newFixture(t)
	p := f.batching(instance.BatchOptions{IdleDuration: never, MaxDuration: never, MaxSize: 2})
	f.srv.Inject(awsemulator.Unauthorized.For(awsemulator.ServiceEC2, "CreateTags", 0))
	reqs := f.requests(t, 2, "uid", f.template(t), karpv1.CapacityTypeOnDemand, []string{"c6i.large"}, []string{"us-west-2b"})

	for _, r := range launchAll(context.Background(), p, reqs) {
		if !awserr.IsUnauthorized(r.err) {
			t.Errorf("%s: %v, want the tagging's UnauthorizedOperation", r.req.ClientToken, r.err)
		}
	}
	listed, err := p.List(context.Background())
	if err != nil || len(listed) != 2 {
		t.Fatalf("List = %d instances, %v; want the 2 untagged ones", len(listed), err)
	}
	for _, inst := range listed {
		if _, tagged := inst.Tags[awsv1.TagNodeClaim]; tagged || inst.Tags[awsv1.TagNodePool] != "default" {
			t.Errorf("listed %s with tags %v, want the nodepool tag and no nodeclaim tag", inst.ID, inst.Tags)
		}
	}
}

func TestBatchSameTokenTwice(t *testing.T) {
	f := newFixture(t)
	p := f.batching(instance.BatchOptions{IdleDuration: never, MaxDuration: never, MaxSize: 2})
	req := f.request(t, f.template(t), karpv1.CapacityTypeOnDemand, "uid-1", []string{"c6i.large"}, []string{"us-west-2b"})

	results := launchAll(context.Background(), p, []instance.LaunchRequest{req, req})
	if results[0].err != nil || results[1].err != nil || results[0].launched.Instance.ID != results[1].launched.Instance.ID {
		t.Errorf("launches of one token: %+v", results)
	}
	if n := len(f.srv.Instances()); n != 1 {
		t.Errorf("%d instances, want 1", n)
	}
	if n := unshared(results); n != 1 {
		t.Errorf("%d results record the fleet's errors, want 1", n)
	}
}

func TestBatchWindows(t *testing.T) {
	tests := []struct {
		name string
		opts instance.BatchOptions
	}{
		{"defaults", instance.BatchOptions{}},
		{"sent when old though never idle", instance.BatchOptions{IdleDuration: never, MaxDuration: 20 * time.Millisecond}},
		{"batching off", instance.BatchOptions{IdleDuration: never, MaxDuration: never, MaxSize: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			p := f.batching(tt.opts)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req := f.request(t, f.template(t), karpv1.CapacityTypeOnDemand, "uid-1", []string{"c6i.large"}, []string{"us-west-2b"})
			if _, err := p.Launch(ctx, req); err != nil {
				t.Fatalf("lone launch: %v", err)
			}
			if n := instance.PendingLaunches(p); n != 0 {
				t.Errorf("%d launches pending", n)
			}
		})
	}
}

// histogram reads the create_fleet series of h: its sample count and sum.
func histogram(t *testing.T, h interface {
	WithLabelValues(...string) prometheus.Observer
}) (uint64, float64) {
	t.Helper()
	var m dto.Metric
	if err := h.WithLabelValues("create_fleet").(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}
