package awsemulator

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/joinery-dev/joinery/cloudprovider/aws/catalogdata"
)

type poolSpec struct {
	instanceType string
	zone         string
	priority     *float64
}

func (f launchFixture) fleetInput(template, capacityType, strategy string, pools []poolSpec) *ec2.CreateFleetInput {
	var overrides []ec2types.FleetLaunchTemplateOverridesRequest
	for _, p := range pools {
		overrides = append(overrides, ec2types.FleetLaunchTemplateOverridesRequest{
			InstanceType: ec2types.InstanceType(p.instanceType), SubnetId: aws.String(f.subnets[p.zone].ID),
			AvailabilityZone: aws.String(p.zone), Priority: p.priority,
		})
	}
	in := &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(template), Version: aws.String("$Latest")},
			Overrides:                   overrides,
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityType(capacityType),
		},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{
			{Key: aws.String("karpenter.sh/nodeclaim"), Value: aws.String("default-abcde")},
		}}},
	}
	if capacityType == CapacityTypeSpot {
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategy(strategy)}
	} else {
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategy(strategy)}
	}
	return in
}

// cheapestOnDemand orders types by their catalog on-demand price.
func cheapestOnDemand(t *testing.T, types ...string) []string {
	t.Helper()
	price := func(name string) float64 {
		it, ok := catalogdata.Lookup(name)
		if !ok {
			t.Fatalf("no type %s in the catalog", name)
		}
		return it.OnDemandUSD
	}
	out := slices.Clone(types)
	slices.SortStableFunc(out, func(a, b string) int {
		switch {
		case price(a) < price(b):
			return -1
		case price(a) > price(b):
			return 1
		}
		return 0
	})
	return out
}

func TestCreateFleetLaunchesTheCheapestPoolOncePerToken(t *testing.T) {
	srv := NewServer(Options{})
	defer srv.Close()
	client := ec2.NewFromConfig(srv.Config())
	ctx := context.Background()
	f := newLaunchFixture(t, srv)
	f.createTemplate(t, client, "node-lt", f.amd64)

	byPrice := cheapestOnDemand(t, "m5.xlarge", "c6i.large", "r5.large")
	var pools []poolSpec
	for _, it := range []string{"m5.xlarge", "c6i.large", "r5.large"} {
		pools = append(pools, poolSpec{instanceType: it, zone: "us-west-2b"}, poolSpec{instanceType: it, zone: "us-west-2c"})
	}
	in := f.fleetInput("node-lt", CapacityTypeOnDemand, "lowest-price", pools)
	in.ClientToken = aws.String("nodeclaim-uid-1")
	freeBefore := f.subnets["us-west-2b"].AvailableIPs

	out, err := client.CreateFleet(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Errors) != 0 || len(out.Instances) != 1 || len(out.Instances[0].InstanceIds) != 1 {
		t.Fatalf("CreateFleet = errors %+v instances %+v, want one instance", out.Errors, out.Instances)
	}
	got := out.Instances[0]
	if string(got.InstanceType) != byPrice[0] || aws.ToString(got.LaunchTemplateAndOverrides.Overrides.SubnetId) != f.subnets["us-west-2b"].ID {
		t.Errorf("launched %s in %s, want the cheapest %s in the first listed zone", got.InstanceType, aws.ToString(got.LaunchTemplateAndOverrides.Overrides.SubnetId), byPrice[0])
	}
	id := got.InstanceIds[0]

	again, err := client.CreateFleet(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(again.FleetId) != aws.ToString(out.FleetId) || len(again.Instances) != 1 || again.Instances[0].InstanceIds[0] != id {
		t.Errorf("retried token answered %+v, want the first answer", again)
	}
	if n := len(srv.Instances()); n != 1 {
		t.Errorf("%d instances after a retried token, want 1", n)
	}
	changed := f.fleetInput("node-lt", CapacityTypeOnDemand, "lowest-price", pools[1:])
	changed.ClientToken = in.ClientToken
	if _, err := client.CreateFleet(ctx, changed); errorCode(err) != "IdempotentParameterMismatch" {
		t.Errorf("token reused with other parameters: %v, want IdempotentParameterMismatch", err)
	}

	desc, err := client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	inst := desc.Reservations[0].Instances[0]
	subnet := f.subnets["us-west-2b"]
	if !netip.MustParsePrefix(subnet.CIDR).Contains(netip.MustParseAddr(aws.ToString(inst.PrivateIpAddress))) {
		t.Errorf("private IP %s not in subnet %s", aws.ToString(inst.PrivateIpAddress), subnet.CIDR)
	}
	tags := map[string]string{}
	for _, tag := range inst.Tags {
		tags[aws.ToString(tag.Key)] = aws.ToString(tag.Value)
	}
	checks := []struct {
		name string
		ok   bool
	}{
		{"running", inst.State.Name == ec2types.InstanceStateNameRunning},
		{"zone", aws.ToString(inst.Placement.AvailabilityZone) == "us-west-2b"},
		{"image", aws.ToString(inst.ImageId) == f.amd64},
		{"template instance tag", tags["Name"] == "node"},
		{"fleet instance tag", tags["karpenter.sh/nodeclaim"] == "default-abcde"},
		{"fleet id tag", tags["aws:ec2:fleet-id"] == aws.ToString(out.FleetId)},
		{"instance profile", aws.ToString(inst.IamInstanceProfile.Arn) == "arn:aws:iam::"+AccountID+":instance-profile/"+f.profile},
		{"security group", len(inst.SecurityGroups) == 1 && aws.ToString(inst.SecurityGroups[0].GroupId) == f.sg},
		{"metadata", inst.MetadataOptions.HttpTokens == ec2types.HttpTokensStateRequired && aws.ToInt32(inst.MetadataOptions.HttpPutResponseHopLimit) == 1},
		{"monitoring", inst.Monitoring.State == ec2types.MonitoringStateEnabled},
		{"on-demand", inst.InstanceLifecycle == ""},
		{"volume", len(inst.BlockDeviceMappings) == 1 && aws.ToString(inst.BlockDeviceMappings[0].DeviceName) == "/dev/xvda"},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("instance %s: %s wrong: %+v", id, c.name, inst)
		}
	}
	stored, _ := srv.Instance(id)
	if stored.UserData != "#!/bin/bash\necho hello\n" || stored.VolumeTags["team"] != "a" {
		t.Errorf("instance user data %q, volume tags %v", stored.UserData, stored.VolumeTags)
	}
	for _, sn := range srv.Subnets() {
		if sn.ID == subnet.ID && sn.AvailableIPs != freeBefore-1 {
			t.Errorf("subnet free IPs %d, want %d", sn.AvailableIPs, freeBefore-1)
		}
	}
}

func TestCreateFleetPoolChoiceAndErrors(t *testing.T) {
	pri := func(p float64) *float64 { return &p }
	tests := []struct {
		name         string
		capacityType string
		strategy     string
		pools        []poolSpec
		setup        func(srv *Server, f launchFixture)
		template     string // "" = amd64 template
		wantType     string // "" = nothing launched
		wantZone     string
		wantErrors   []string // error codes, in order
	}{
		{
			name: "insufficient capacity on the cheapest: the next is launched", capacityType: CapacityTypeOnDemand, strategy: "lowest-price",
			pools: []poolSpec{{instanceType: "c6i.large", zone: "us-west-2b"}, {instanceType: "c6i.large", zone: "us-west-2c"}, {instanceType: "m5.2xlarge", zone: "us-west-2b"}},
			setup: func(srv *Server, _ launchFixture) {
				srv.SetInsufficientCapacity(CapacityTypeOnDemand, "c6i.large", "us-west-2b")
			},
			wantType: "c6i.large", wantZone: "us-west-2c", wantErrors: []string{"InsufficientInstanceCapacity"},
		},
		{
			name: "every pool exhausted", capacityType: CapacityTypeSpot, strategy: "price-capacity-optimized",
			pools: []poolSpec{{instanceType: "c6i.large", zone: "us-west-2b"}, {instanceType: "c6i.large", zone: "us-west-2c"}},
			setup: func(srv *Server, _ launchFixture) {
				srv.SetInsufficientCapacity(CapacityTypeSpot, "c6i.large", "us-west-2b")
				srv.SetLaunchError(CapacityTypeSpot, "c6i.large", "us-west-2c", "MaxSpotInstanceCountExceeded")
			},
			wantErrors: []string{"InsufficientInstanceCapacity", "MaxSpotInstanceCountExceeded"},
		},
		{
			name: "on-demand errors do not touch spot", capacityType: CapacityTypeSpot, strategy: "price-capacity-optimized",
			pools: []poolSpec{{instanceType: "c6i.large", zone: "us-west-2b"}},
			setup: func(srv *Server, _ launchFixture) {
				srv.SetInsufficientCapacity(CapacityTypeOnDemand, "c6i.large", "us-west-2b")
			},
			wantType: "c6i.large", wantZone: "us-west-2b",
		},
		{
			name: "spot takes the lowest current spot price", capacityType: CapacityTypeSpot, strategy: "price-capacity-optimized",
			pools: []poolSpec{{instanceType: "c6i.large", zone: "us-west-2b"}, {instanceType: "m5.2xlarge", zone: "us-west-2c"}},
			setup: func(srv *Server, _ launchFixture) {
				srv.SetSpotPrice("m5.2xlarge", "us-west-2c", 0.0001, time.Now().Add(-time.Second))
			},
			wantType: "m5.2xlarge", wantZone: "us-west-2c",
		},
		{
			name: "prioritized follows priority over price", capacityType: CapacityTypeOnDemand, strategy: "prioritized",
			pools:    []poolSpec{{instanceType: "c6i.large", zone: "us-west-2b", priority: pri(2)}, {instanceType: "m5.2xlarge", zone: "us-west-2c", priority: pri(1)}},
			wantType: "m5.2xlarge", wantZone: "us-west-2c",
		},
		{
			name: "type not offered in the zone", capacityType: CapacityTypeOnDemand, strategy: "lowest-price",
			pools:    []poolSpec{{instanceType: "p5.48xlarge", zone: "us-west-2c"}, {instanceType: "m5.2xlarge", zone: "us-west-2c"}},
			wantType: "m5.2xlarge", wantZone: "us-west-2c", wantErrors: []string{"Unsupported"},
		},
		{
			name: "subnet out of addresses", capacityType: CapacityTypeOnDemand, strategy: "lowest-price",
			pools: []poolSpec{{instanceType: "c6i.large", zone: "us-west-2b"}, {instanceType: "c6i.large", zone: "us-west-2c"}},
			setup: func(srv *Server, f launchFixture) {
				if err := srv.SetAvailableIPs(f.subnets["us-west-2b"].ID, 0); err != nil {
					panic(err)
				}
			},
			wantType: "c6i.large", wantZone: "us-west-2c", wantErrors: []string{"InsufficientFreeAddressesInSubnet"},
		},
		{
			name: "architecture mismatch", capacityType: CapacityTypeOnDemand, strategy: "lowest-price",
			pools:      []poolSpec{{instanceType: "m7g.large", zone: "us-west-2b"}},
			wantErrors: []string{"InvalidParameterValue"},
		},
		{
			name: "template missing", capacityType: CapacityTypeOnDemand, strategy: "lowest-price", template: "missing",
			pools:      []poolSpec{{instanceType: "c6i.large", zone: "us-west-2b"}},
			wantErrors: []string{"InvalidLaunchTemplateName.NotFoundException"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := NewServer(Options{})
			defer srv.Close()
			client := ec2.NewFromConfig(srv.Config())
			f := newLaunchFixture(t, srv)
			f.createTemplate(t, client, "node-lt", f.amd64)
			if tt.setup != nil {
				tt.setup(srv, f)
			}
			out, err := client.CreateFleet(context.Background(), f.fleetInput(cmpOr(tt.template, "node-lt"), tt.capacityType, tt.strategy, tt.pools))
			if err != nil {
				t.Fatal(err)
			}
			var codes []string
			for _, e := range out.Errors {
				codes = append(codes, aws.ToString(e.ErrorCode))
			}
			if !slices.Equal(codes, tt.wantErrors) {
				t.Errorf("errors %v, want %v", codes, tt.wantErrors)
			}
			if tt.wantType == "" {
				if len(out.Instances) != 0 {
					t.Errorf("launched %+v, want nothing", out.Instances)
				}
				return
			}
			if len(out.Instances) != 1 {
				t.Fatalf("instances %+v, want one", out.Instances)
			}
			inst, _ := srv.Instance(out.Instances[0].InstanceIds[0])
			if inst.InstanceType != tt.wantType || inst.Zone != tt.wantZone || inst.Lifecycle != tt.capacityType {
				t.Errorf("launched %s %s in %s, want %s %s in %s", inst.Lifecycle, inst.InstanceType, inst.Zone, tt.capacityType, tt.wantType, tt.wantZone)
			}
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func TestCreateFleetTargetsCapacityReservations(t *testing.T) {
	srv := NewServer(Options{})
	defer srv.Close()
	client := ec2.NewFromConfig(srv.Config())
	ctx := context.Background()
	f := newLaunchFixture(t, srv)
	var target CapacityReservation
	for _, cr := range srv.CapacityReservations() {
		if cr.InstanceMatchCriteria == "targeted" && cr.Type == "default" && cr.OwnerID == AccountID {
			target = cr
		}
	}
	if target.ID == "" || target.AvailableInstances < 1 {
		t.Fatalf("no targeted reservation with room seeded: %+v", target)
	}
	f.createTemplate(t, client, "reserved", f.amd64, func(d *ec2types.RequestLaunchTemplateData) {
		d.CapacityReservationSpecification = &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
			CapacityReservationTarget: &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(target.ID)},
		}
	})
	pools := []poolSpec{{instanceType: target.InstanceType, zone: target.Zone}}
	for i := int32(0); i < target.AvailableInstances; i++ {
		out, err := client.CreateFleet(ctx, f.fleetInput("reserved", CapacityTypeOnDemand, "lowest-price", pools))
		if err != nil || len(out.Instances) != 1 {
			t.Fatalf("launch %d into %s: %v %+v", i, target.ID, err, out)
		}
		inst, _ := srv.Instance(out.Instances[0].InstanceIds[0])
		if inst.CapacityReservationID != target.ID {
			t.Errorf("instance reservation %q, want %s", inst.CapacityReservationID, target.ID)
		}
	}
	out, err := client.CreateFleet(ctx, f.fleetInput("reserved", CapacityTypeOnDemand, "lowest-price", pools))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Instances) != 0 || len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "ReservationCapacityExceeded" {
		t.Fatalf("launch beyond the reservation: %+v", out)
	}
	// Terminating one gives its slot back.
	first := srv.Instances()[0]
	if _, err := client.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{first.ID}}); err != nil {
		t.Fatal(err)
	}
	out, err = client.CreateFleet(ctx, f.fleetInput("reserved", CapacityTypeOnDemand, "lowest-price", pools))
	if err != nil || len(out.Instances) != 1 {
		t.Fatalf("launch after a termination: %v %+v", err, out)
	}
}
