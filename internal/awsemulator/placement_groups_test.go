package awsemulator

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func TestPlacementGroupsCreateDescribeDelete(t *testing.T) {
	srv := NewServer(Options{})
	defer srv.Close()
	client := ec2.NewFromConfig(srv.Config())
	ctx := context.Background()

	for _, in := range []*ec2.CreatePlacementGroupInput{
		{GroupName: aws.String("training"), Strategy: ec2types.PlacementStrategyCluster},
		{GroupName: aws.String("kafka"), Strategy: ec2types.PlacementStrategyPartition, PartitionCount: aws.Int32(3)},
		{GroupName: aws.String("etcd"), Strategy: ec2types.PlacementStrategySpread},
	} {
		if _, err := client.CreatePlacementGroup(ctx, in); err != nil {
			t.Fatalf("CreatePlacementGroup %s: %v", aws.ToString(in.GroupName), err)
		}
	}
	refused := []struct {
		name string
		in   *ec2.CreatePlacementGroupInput
		code string
	}{
		{"duplicate name", &ec2.CreatePlacementGroupInput{GroupName: aws.String("training"), Strategy: ec2types.PlacementStrategyCluster}, "InvalidPlacementGroup.Duplicate"},
		{"eight partitions", &ec2.CreatePlacementGroupInput{GroupName: aws.String("big"), Strategy: ec2types.PlacementStrategyPartition, PartitionCount: aws.Int32(8)}, "InvalidParameterValue"},
		{"unknown strategy", &ec2.CreatePlacementGroupInput{GroupName: aws.String("odd"), Strategy: "stacked"}, "InvalidParameterValue"},
	}
	for _, tt := range refused {
		if _, err := client.CreatePlacementGroup(ctx, tt.in); apiCode(err) != tt.code {
			t.Errorf("%s: CreatePlacementGroup = %v, want %s", tt.name, err, tt.code)
		}
	}

	describe := []struct {
		name      string
		in        *ec2.DescribePlacementGroupsInput
		wantNames []string
		wantCode  string
	}{
		{name: "all", in: &ec2.DescribePlacementGroupsInput{}, wantNames: []string{"etcd", "kafka", "training"}},
		{name: "by name", in: &ec2.DescribePlacementGroupsInput{GroupNames: []string{"kafka"}}, wantNames: []string{"kafka"}},
		{name: "by strategy filter", in: &ec2.DescribePlacementGroupsInput{Filters: []ec2types.Filter{ec2Filter("strategy", "spread")}}, wantNames: []string{"etcd"}},
		{name: "available only", in: &ec2.DescribePlacementGroupsInput{GroupNames: []string{"training"}, Filters: []ec2types.Filter{ec2Filter("state", "available")}}, wantNames: []string{"training"}},
		{name: "unknown name", in: &ec2.DescribePlacementGroupsInput{GroupNames: []string{"nope"}}, wantCode: "InvalidPlacementGroup.Unknown"},
		{name: "unknown id", in: &ec2.DescribePlacementGroupsInput{GroupIds: []string{"pg-0123456789abcdef0"}}, wantCode: "InvalidPlacementGroup.Unknown"},
	}
	byName := map[string]ec2types.PlacementGroup{}
	for _, tt := range describe {
		out, err := client.DescribePlacementGroups(ctx, tt.in)
		if tt.wantCode != "" {
			if apiCode(err) != tt.wantCode {
				t.Errorf("%s: DescribePlacementGroups = %v, want %s", tt.name, err, tt.wantCode)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var names []string
		for _, pg := range out.PlacementGroups {
			names = append(names, aws.ToString(pg.GroupName))
			byName[aws.ToString(pg.GroupName)] = pg
		}
		if len(names) != len(tt.wantNames) {
			t.Errorf("%s: groups %v, want %v", tt.name, names, tt.wantNames)
			continue
		}
		for i := range names {
			if names[i] != tt.wantNames[i] {
				t.Errorf("%s: groups %v, want %v", tt.name, names, tt.wantNames)
			}
		}
	}
	kafka := byName["kafka"]
	if kafka.Strategy != ec2types.PlacementStrategyPartition || aws.ToInt32(kafka.PartitionCount) != 3 || kafka.State != ec2types.PlacementGroupStateAvailable {
		t.Errorf("kafka = %+v, want an available partition group of 3", kafka)
	}
	if byName["etcd"].SpreadLevel != ec2types.SpreadLevelRack {
		t.Errorf("etcd spread level = %q, want rack", byName["etcd"].SpreadLevel)
	}
	out, err := client.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{GroupIds: []string{aws.ToString(kafka.GroupId)}})
	if err != nil || len(out.PlacementGroups) != 1 || aws.ToString(out.PlacementGroups[0].GroupName) != "kafka" {
		t.Errorf("by id = %+v, %v; want kafka", out, err)
	}
	if _, err := client.DeletePlacementGroup(ctx, &ec2.DeletePlacementGroupInput{GroupName: aws.String("etcd")}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{GroupNames: []string{"etcd"}}); apiCode(err) != "InvalidPlacementGroup.Unknown" {
		t.Errorf("deleted group described: %v", err)
	}
}

// Instances launched from a template with a placement group run in it, spread over the
// partitions of a partition group; the template's prefix count is recorded; a group that does
// not exist fails the pool; a group holding instances cannot be deleted.
func TestFleetLaunchesIntoPlacementGroups(t *testing.T) {
	srv := NewServer(Options{})
	defer srv.Close()
	client := ec2.NewFromConfig(srv.Config())
	ctx := context.Background()
	f := newLaunchFixture(t, srv)
	kafka, err := srv.AddPlacementGroup(PlacementGroup{Name: "kafka", Strategy: "partition", PartitionCount: 3})
	if err != nil {
		t.Fatal(err)
	}
	f.createTemplate(t, client, "in-group", f.amd64, func(d *ec2types.RequestLaunchTemplateData) {
		d.Placement = &ec2types.LaunchTemplatePlacementRequest{GroupId: aws.String(kafka.ID)}
		d.SecurityGroupIds = nil
		d.NetworkInterfaces = []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{{
			DeviceIndex: aws.Int32(0), Groups: []string{f.sg}, Ipv4PrefixCount: aws.Int32(2),
		}}
	})
	f.createTemplate(t, client, "missing-group", f.amd64, func(d *ec2types.RequestLaunchTemplateData) {
		d.Placement = &ec2types.LaunchTemplatePlacementRequest{GroupName: aws.String("nope")}
	})

	partitions := map[int32]int{}
	for range 3 {
		out, err := client.CreateFleet(ctx, f.fleetInput("in-group", CapacityTypeOnDemand, "lowest-price", []poolSpec{{instanceType: "m5.large", zone: "us-west-2a"}}))
		if err != nil || len(out.Instances) != 1 {
			t.Fatalf("CreateFleet = %+v, %v", out, err)
		}
		id := out.Instances[0].InstanceIds[0]
		inst, _ := srv.Instance(id)
		if inst.Placement.GroupID != kafka.ID || inst.IPv4PrefixCount != 2 {
			t.Errorf("instance %s placement %+v prefixes %d, want group %s and 2 prefixes", id, inst.Placement, inst.IPv4PrefixCount, kafka.ID)
		}
		described, err := client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
		if err != nil {
			t.Fatal(err)
		}
		p := described.Reservations[0].Instances[0].Placement
		if aws.ToString(p.GroupId) != kafka.ID || aws.ToString(p.GroupName) != "kafka" {
			t.Errorf("described placement %+v, want group kafka", p)
		}
		partitions[aws.ToInt32(p.PartitionNumber)]++
	}
	if len(partitions) != 3 || partitions[1] != 1 || partitions[2] != 1 || partitions[3] != 1 {
		t.Errorf("instances per partition %v, want one in each of 1..3", partitions)
	}

	out, err := client.CreateFleet(ctx, f.fleetInput("missing-group", CapacityTypeOnDemand, "lowest-price", []poolSpec{{instanceType: "m5.large", zone: "us-west-2a"}}))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Instances) != 0 || len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "InvalidPlacementGroup.Unknown" {
		t.Errorf("launch into a missing group = instances %+v errors %+v, want InvalidPlacementGroup.Unknown", out.Instances, out.Errors)
	}
	if _, err := client.DeletePlacementGroup(ctx, &ec2.DeletePlacementGroupInput{GroupName: aws.String("kafka")}); apiCode(err) != "InvalidPlacementGroup.InUse" {
		t.Errorf("deleting a group in use = %v, want InvalidPlacementGroup.InUse", err)
	}
}

func TestDescribeInstanceStatusReportsFailedChecks(t *testing.T) {
	srv := NewServer(Options{})
	defer srv.Close()
	srv.SetInstanceTransitions(0, 0)
	client := ec2.NewFromConfig(srv.Config())
	ctx := context.Background()
	f := newLaunchFixture(t, srv)
	f.createTemplate(t, client, "node-lt", f.amd64)
	var ids []string
	for range 2 {
		out, err := client.CreateFleet(ctx, f.fleetInput("node-lt", CapacityTypeOnDemand, "lowest-price", []poolSpec{{instanceType: "m5.large", zone: "us-west-2a"}}))
		if err != nil || len(out.Instances) != 1 {
			t.Fatalf("CreateFleet = %+v, %v", out, err)
		}
		ids = append(ids, out.Instances[0].InstanceIds[0])
	}
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := srv.SetStatusCheckFailed(ids[0], StatusCheckSystem, since); err != nil {
		t.Fatal(err)
	}
	if err := srv.AddScheduledEvent(ids[1], ScheduledEvent{Code: "instance-retirement", Description: "retiring", NotBefore: since}); err != nil {
		t.Fatal(err)
	}
	if err := srv.SetStatusCheckFailed("i-0000000000000000f", StatusCheckSystem, since); err == nil {
		t.Error("a check of an unknown instance was failed")
	}

	out, err := client.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{InstanceIds: ids})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]ec2types.InstanceStatus{}
	for _, st := range out.InstanceStatuses {
		got[aws.ToString(st.InstanceId)] = st
	}
	impaired := got[ids[0]]
	if impaired.SystemStatus == nil || impaired.SystemStatus.Status != ec2types.SummaryStatusImpaired ||
		impaired.SystemStatus.Details[0].Status != ec2types.StatusTypeFailed || !aws.ToTime(impaired.SystemStatus.Details[0].ImpairedSince).Equal(since) {
		t.Errorf("system status of %s = %+v, want failed since %s", ids[0], impaired.SystemStatus, since)
	}
	if impaired.InstanceStatus == nil || impaired.InstanceStatus.Status != ec2types.SummaryStatusOk {
		t.Errorf("instance status of %s = %+v, want ok", ids[0], impaired.InstanceStatus)
	}
	if evs := got[ids[1]].Events; len(evs) != 1 || evs[0].Code != ec2types.EventCodeInstanceRetirement {
		t.Errorf("events of %s = %+v, want one instance-retirement", ids[1], evs)
	}

	if err := srv.SetStatusCheckFailed(ids[0], StatusCheckSystem, time.Time{}); err != nil {
		t.Fatal(err)
	}
	out, err = client.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{InstanceIds: ids[:1]})
	if err != nil || len(out.InstanceStatuses) != 1 || out.InstanceStatuses[0].SystemStatus.Status != ec2types.SummaryStatusOk {
		t.Errorf("after passing again = %+v, %v; want ok", out, err)
	}
}
