package awsemulator

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func TestDescribeTerminateAndTagInstances(t *testing.T) {
	srv := NewServer(Options{})
	defer srv.Close()
	client := ec2.NewFromConfig(srv.Config())
	ctx := context.Background()
	f := newLaunchFixture(t, srv)
	f.createTemplate(t, client, "node-lt", f.amd64)
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	srv.SetClock(func() time.Time { return now })
	srv.SetInstanceTransitions(time.Minute, time.Minute)

	in := f.fleetInput("node-lt", CapacityTypeOnDemand, "lowest-price", []poolSpec{{instanceType: "c6i.large", zone: "us-west-2b"}})
	in.TargetCapacitySpecification.TotalTargetCapacity = aws.Int32(7)
	out, err := client.CreateFleet(ctx, in)
	if err != nil || len(out.Instances) != 1 || len(out.Instances[0].InstanceIds) != 7 {
		t.Fatalf("CreateFleet: %v %+v", err, out)
	}
	ids := out.Instances[0].InstanceIds
	slices.Sort(ids)

	states := func(in *ec2.DescribeInstancesInput) map[string]ec2types.InstanceStateName {
		t.Helper()
		got := map[string]ec2types.InstanceStateName{}
		paginator := ec2.NewDescribeInstancesPaginator(client, in)
		pages := 0
		for paginator.HasMorePages() {
			page, err := paginator.NextPage(ctx)
			if err != nil {
				t.Fatalf("DescribeInstances: %v", err)
			}
			pages++
			for _, r := range page.Reservations {
				for _, inst := range r.Instances {
					got[aws.ToString(inst.InstanceId)] = inst.State.Name
				}
			}
		}
		return got
	}
	if got := states(&ec2.DescribeInstancesInput{MaxResults: aws.Int32(5)}); len(got) != 7 || got[ids[0]] != ec2types.InstanceStateNamePending {
		t.Fatalf("paged describe = %v, want 7 pending", got)
	}
	now = now.Add(time.Minute)
	if got := states(&ec2.DescribeInstancesInput{InstanceIds: ids[:1]}); got[ids[0]] != ec2types.InstanceStateNameRunning {
		t.Fatalf("after a minute: %v, want running", got)
	}

	if _, err := client.CreateTags(ctx, &ec2.CreateTagsInput{Resources: ids[:2], Tags: []ec2types.Tag{{Key: aws.String("team"), Value: aws.String("x")}}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		filters []ec2types.Filter
		want    []string
	}{
		{"tag value", []ec2types.Filter{ec2Filter("tag:team", "x")}, ids[:2]},
		{"tag key", []ec2types.Filter{ec2Filter("tag-key", "team")}, ids[:2]},
		{"tag from the fleet", []ec2types.Filter{ec2Filter("tag:karpenter.sh/nodeclaim", "default-*")}, ids},
		{"state and tag", []ec2types.Filter{ec2Filter("instance-state-name", "running"), ec2Filter("tag:team", "x")}, ids[:2]},
		{"no longer pending", []ec2types.Filter{ec2Filter("instance-state-name", "pending")}, nil},
		{"no match", []ec2types.Filter{ec2Filter("tag:team", "y")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := states(&ec2.DescribeInstancesInput{Filters: tt.filters})
			var gotIDs []string
			for id := range got {
				gotIDs = append(gotIDs, id)
			}
			slices.Sort(gotIDs)
			if !slices.Equal(gotIDs, tt.want) {
				t.Errorf("got %v, want %v", gotIDs, tt.want)
			}
		})
	}

	_, err = client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{"i-0123456789abcdef0"}})
	if errorCode(err) != "InvalidInstanceID.NotFound" {
		t.Errorf("unknown id: %v, want InvalidInstanceID.NotFound", err)
	}
	_, err = client.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{"bogus"}})
	if errorCode(err) != "InvalidInstanceID.Malformed" {
		t.Errorf("malformed id: %v, want InvalidInstanceID.Malformed", err)
	}

	free := func() int32 {
		for _, sn := range srv.Subnets() {
			if sn.ID == f.subnets["us-west-2b"].ID {
				return sn.AvailableIPs
			}
		}
		return -1
	}
	before := free()
	term, err := client.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids[:1]})
	if err != nil {
		t.Fatal(err)
	}
	change := term.TerminatingInstances[0]
	if change.PreviousState.Name != ec2types.InstanceStateNameRunning || change.CurrentState.Name != ec2types.InstanceStateNameShuttingDown {
		t.Errorf("terminate: %s → %s, want running → shutting-down", change.PreviousState.Name, change.CurrentState.Name)
	}
	if free() != before+1 {
		t.Errorf("subnet free IPs %d after terminating, want %d", free(), before+1)
	}
	now = now.Add(time.Minute)
	term, err = client.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids[:1]})
	if err != nil {
		t.Fatal(err)
	}
	change = term.TerminatingInstances[0]
	if change.PreviousState.Name != ec2types.InstanceStateNameTerminated || change.CurrentState.Name != ec2types.InstanceStateNameTerminated {
		t.Errorf("terminating twice: %s → %s, want terminated → terminated", change.PreviousState.Name, change.CurrentState.Name)
	}
	if free() != before+1 {
		t.Errorf("terminating twice released the address again: %d", free())
	}
	if got := states(&ec2.DescribeInstancesInput{Filters: []ec2types.Filter{ec2Filter("instance-state-name", "terminated")}}); len(got) != 1 {
		t.Errorf("terminated instances %v, want %s", got, ids[0])
	}
}
