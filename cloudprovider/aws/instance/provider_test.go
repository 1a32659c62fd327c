package instance_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider/aws/amifamily"
	"github.com/joinery-dev/joinery/cloudprovider/aws/awserr"
	"github.com/joinery-dev/joinery/cloudprovider/aws/catalogdata"
	"github.com/joinery-dev/joinery/cloudprovider/aws/instance"
	"github.com/joinery-dev/joinery/cloudprovider/aws/launchtemplate"
	"github.com/joinery-dev/joinery/internal/awsemulator"
)

const cluster = awsemulator.DefaultClusterName

type fixture struct {
	srv       *awsemulator.Server
	client    *ec2.Client
	p         *instance.Provider
	templates *launchtemplate.Provider
	subnets   map[string]string // zone → subnet id
	image     string
	profile   string
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	srv := awsemulator.NewServer(awsemulator.Options{})
	t.Cleanup(srv.Close)
	// The SDK's own retry decisions, without its sleeps.
	client := ec2.NewFromConfig(srv.Config(), func(o *ec2.Options) {
		o.Retryer = retry.AddWithMaxBackoffDelay(retry.NewStandard(), time.Millisecond)
	})
	f := &fixture{
		srv: srv, client: client, subnets: map[string]string{}, profile: "KarpenterNodeInstanceProfile-" + cluster,
		p:         instance.New(client, instance.Options{ClusterName: cluster}),
		templates: launchtemplate.New(client, launchtemplate.Options{ClusterName: cluster}),
	}
	for _, sn := range srv.Subnets() {
		if sn.Tags["karpenter.sh/discovery"] == cluster {
			f.subnets[sn.Zone] = sn.ID
		}
	}
	f.image = srv.Images("custom-ami-amd64")[0].ID
	return f
}

func (f *fixture) template(t testing.TB, mutate ...func(*launchtemplate.Spec)) string {
	t.Helper()
	spec := launchtemplate.Spec{
		ImageID: f.image, InstanceProfile: f.profile, UserData: "#!/bin/bash\n", NodeClass: "default",
		MetadataOptions: amifamily.DefaultMetadataOptions(), BlockDeviceMappings: amifamily.DefaultBlockDeviceMappings(awsv1.AMIFamilyAL2023),
	}
	for _, m := range mutate {
		m(&spec)
	}
	tmpl, err := f.templates.Ensure(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	return tmpl.Name
}

// request asks for types in zones, each override priced at its catalog on-demand price.
func (f *fixture) request(t testing.TB, template, capacityType, token string, types []string, zones []string) instance.LaunchRequest {
	t.Helper()
	var overrides []instance.Override
	for _, it := range types {
		info, ok := catalogdata.Lookup(it)
		if !ok {
			t.Fatalf("no type %s", it)
		}
		for _, z := range zones {
			overrides = append(overrides, instance.Override{InstanceType: it, Zone: z, SubnetID: f.subnets[z], Price: info.OnDemandUSD})
		}
	}
	return instance.LaunchRequest{
		ClientToken: token, CapacityType: capacityType,
		Templates: []instance.TemplateConfig{{TemplateName: template, Overrides: overrides}},
		Tags:      instance.Tags(cluster, "default-"+token, "default", "default", map[string]string{"team": "a"}),
	}
}

func TestLaunchCheapestFirstAndIdempotent(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	lt := f.template(t)
	req := f.request(t, lt, karpv1.CapacityTypeOnDemand, "uid-1", []string{"m5.2xlarge", "c6i.large", "r6i.xlarge"}, []string{"us-west-2b", "us-west-2c"})

	got, err := f.p.Launch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if got.Instance.InstanceType != "c6i.large" || got.Instance.Zone != "us-west-2b" || got.Instance.CapacityType != karpv1.CapacityTypeOnDemand || got.TemplateName != lt {
		t.Errorf("launched %+v from %s, want on-demand c6i.large in us-west-2b", got.Instance, got.TemplateName)
	}
	again, err := f.p.Launch(ctx, req)
	if err != nil || again.Instance.ID != got.Instance.ID {
		t.Errorf("retried launch: %+v %v, want instance %s", again.Instance, err, got.Instance.ID)
	}
	// The same token with other overrides (an offering marked unavailable meanwhile) still
	// finds the instance it launched.
	narrowed := req
	narrowed.Templates = []instance.TemplateConfig{{TemplateName: lt, Overrides: req.Templates[0].Overrides[2:]}}
	third, err := f.p.Launch(ctx, narrowed)
	if err != nil || third.Instance.ID != got.Instance.ID {
		t.Errorf("retried launch with other overrides: %+v %v, want instance %s", third.Instance, err, got.Instance.ID)
	}
	if n := len(f.srv.Instances()); n != 1 {
		t.Fatalf("%d instances, want 1", n)
	}
	stored := f.srv.Instances()[0]
	for k, v := range map[string]string{"Name": "default-uid-1", "karpenter.sh/nodeclaim": "default-uid-1", "karpenter.sh/nodepool": "default",
		"karpenter.k8s.aws/ec2nodeclass": "default", "kubernetes.io/cluster/" + cluster: "owned", "eks:eks-cluster-name": cluster, "team": "a"} {
		if stored.Tags[k] != v || stored.VolumeTags[k] != v {
			t.Errorf("tag %s: instance %q volume %q, want %q", k, stored.Tags[k], stored.VolumeTags[k], v)
		}
	}
}

func TestLaunchErrors(t *testing.T) {
	tests := []struct {
		name         string
		capacityType string
		setup        func(f *fixture)
		wantType     string
		wantZone     string
		wantKinds    []instance.Kind
		check        func(t *testing.T, err error)
	}{
		{
			name: "capacity error on the cheapest: the next launches", capacityType: karpv1.CapacityTypeSpot,
			setup: func(f *fixture) {
				f.srv.SetInsufficientCapacity(awsemulator.CapacityTypeSpot, "c6i.large", "us-west-2b")
			},
			wantType: "c6i.large", wantZone: "us-west-2c", wantKinds: []instance.Kind{instance.KindCapacity},
		},
		{
			name: "every offering refused", capacityType: karpv1.CapacityTypeOnDemand,
			setup: func(f *fixture) {
				f.srv.SetInsufficientCapacity(awsemulator.CapacityTypeOnDemand, "c6i.large", "us-west-2b")
				f.srv.SetLaunchError(awsemulator.CapacityTypeOnDemand, "c6i.large", "us-west-2c", "VcpuLimitExceeded")
				f.srv.SetLaunchError(awsemulator.CapacityTypeOnDemand, "m5.2xlarge", "us-west-2b", "UnfulfillableCapacity")
				f.srv.SetLaunchError(awsemulator.CapacityTypeOnDemand, "m5.2xlarge", "us-west-2c", "MaxSpotInstanceCountExceeded")
			},
			check: func(t *testing.T, err error) {
				var none *instance.NoInstanceError
				if !errors.As(err, &none) || !none.Only(instance.KindCapacity) || len(none.Errors) != 4 {
					t.Errorf("err = %v, want four capacity errors", err)
				}
			},
		},
		{
			name: "subnet out of addresses", capacityType: karpv1.CapacityTypeOnDemand,
			setup: func(f *fixture) {
				if err := f.srv.SetAvailableIPs(f.subnets["us-west-2b"], 0); err != nil {
					panic(err)
				}
			},
			wantType: "c6i.large", wantZone: "us-west-2c", wantKinds: []instance.Kind{instance.KindSubnetFull},
		},
		{
			name: "throttled twice, then recovered", capacityType: karpv1.CapacityTypeOnDemand,
			setup:    func(f *fixture) { f.srv.Inject(awsemulator.Throttling.For(awsemulator.ServiceEC2, "CreateFleet", 2)) },
			wantType: "c6i.large", wantZone: "us-west-2b",
		},
		{
			name: "throttled throughout", capacityType: karpv1.CapacityTypeOnDemand,
			setup: func(f *fixture) { f.srv.Inject(awsemulator.Throttling.For(awsemulator.ServiceEC2, "CreateFleet", 0)) },
			check: func(t *testing.T, err error) {
				if !awserr.IsThrottled(err) || isFleetErrorList(err) {
					t.Errorf("err = %v, want throttled", err)
				}
			},
		},
		{
			name: "not authorized", capacityType: karpv1.CapacityTypeOnDemand,
			setup: func(f *fixture) { f.srv.Inject(awsemulator.Unauthorized.For(awsemulator.ServiceEC2, "CreateFleet", 0)) },
			check: func(t *testing.T, err error) {
				if !awserr.IsUnauthorized(err) || awserr.Code(err) != "UnauthorizedOperation" {
					t.Errorf("err = %v, want UnauthorizedOperation", err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			lt := f.template(t)
			tt.setup(f)
			req := f.request(t, lt, tt.capacityType, "uid", []string{"c6i.large", "m5.2xlarge"}, []string{"us-west-2b", "us-west-2c"})
			// Spot prices follow the catalog's; make the order the same as on-demand's.
			f.srv.SetSpotPrice("c6i.large", "us-west-2b", 0.01, time.Now().Add(-time.Second))
			f.srv.SetSpotPrice("c6i.large", "us-west-2c", 0.02, time.Now().Add(-time.Second))
			got, err := f.p.Launch(context.Background(), req)
			if tt.check != nil {
				if err == nil {
					t.Fatalf("launched %+v, want an error", got.Instance)
				}
				tt.check(t, err)
				if n := len(f.srv.Instances()); n != 0 {
					t.Errorf("%d instances after a failed launch", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Instance.InstanceType != tt.wantType || got.Instance.Zone != tt.wantZone || got.Instance.CapacityType != tt.capacityType {
				t.Errorf("launched %+v, want %s %s in %s", got.Instance, tt.capacityType, tt.wantType, tt.wantZone)
			}
			var kinds []instance.Kind
			for _, e := range got.Errors {
				kinds = append(kinds, e.Kind())
			}
			if len(kinds) != len(tt.wantKinds) {
				t.Fatalf("fleet errors %v, want kinds %v", got.Errors, tt.wantKinds)
			}
			for i := range kinds {
				if kinds[i] != tt.wantKinds[i] {
					t.Errorf("fleet errors %v, want kinds %v", got.Errors, tt.wantKinds)
				}
			}
		})
	}
}

// isFleetErrorList reports whether err is a fleet's own error list, which throttling never is.
func isFleetErrorList(err error) bool {
	var none *instance.NoInstanceError
	return errors.As(err, &none)
}

func TestLaunchIntoACapacityReservation(t *testing.T) {
	f := newFixture(t)
	var cr awsemulator.CapacityReservation
	for _, r := range f.srv.CapacityReservations() {
		if r.InstanceMatchCriteria == "targeted" && r.Type == "default" && r.OwnerID == awsemulator.AccountID {
			cr = r
		}
	}
	lt := f.template(t, func(s *launchtemplate.Spec) { s.CapacityReservationID = cr.ID })
	req := f.request(t, lt, karpv1.CapacityTypeReserved, "uid-r", []string{cr.InstanceType}, []string{cr.Zone})
	got, err := f.p.Launch(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := f.p.Get(context.Background(), got.Instance.ID)
	if err != nil || inst.CapacityType != karpv1.CapacityTypeReserved || inst.CapacityReservationID != cr.ID {
		t.Errorf("instance %+v %v, want reserved in %s", inst, err, cr.ID)
	}
}

func TestGetListTerminate(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	lt := f.template(t)
	ours, err := f.p.Launch(ctx, f.request(t, lt, karpv1.CapacityTypeOnDemand, "uid-a", []string{"c6i.large"}, []string{"us-west-2b"}))
	if err != nil {
		t.Fatal(err)
	}
	theirs := f.request(t, lt, karpv1.CapacityTypeOnDemand, "uid-b", []string{"c6i.large"}, []string{"us-west-2b"})
	theirs.Tags = instance.Tags("other-cluster", "default-uid-b", "default", "default", nil)
	if _, err := f.p.Launch(ctx, theirs); err != nil {
		t.Fatal(err)
	}

	listed, err := f.p.List(ctx)
	if err != nil || len(listed) != 1 || listed[0].ID != ours.Instance.ID {
		t.Fatalf("List = %+v %v, want only %s", listed, err, ours.Instance.ID)
	}
	got := listed[0]
	if got.Zone != "us-west-2b" || got.ImageID != f.image || got.State != "running" || got.PrivateIP == "" || got.LaunchTime.IsZero() ||
		got.Tags["karpenter.sh/nodepool"] != "default" || got.ProviderID() != "aws:///us-west-2b/"+got.ID {
		t.Errorf("listed %+v", got)
	}
	if _, err := f.p.Get(ctx, "i-0123456789abcdef0"); !errors.Is(err, instance.ErrNotFound) {
		t.Errorf("Get of an unknown id: %v, want ErrNotFound", err)
	}

	if err := f.p.Terminate(ctx, got.ID); err != nil {
		t.Fatalf("first terminate: %v", err)
	}
	if err := f.p.Terminate(ctx, got.ID); !errors.Is(err, instance.ErrNotFound) {
		t.Errorf("second terminate: %v, want ErrNotFound", err)
	}
	if _, err := f.p.Get(ctx, got.ID); !errors.Is(err, instance.ErrNotFound) {
		t.Errorf("Get of a terminated instance: %v, want ErrNotFound", err)
	}
	if err := f.p.Terminate(ctx, "i-0123456789abcdef0"); !errors.Is(err, instance.ErrNotFound) {
		t.Errorf("terminating an unknown id: %v, want ErrNotFound", err)
	}
	if listed, _ := f.p.List(ctx); len(listed) != 0 {
		t.Errorf("List after termination = %+v", listed)
	}
}

func TestParseProviderID(t *testing.T) {
	tests := []struct {
		in, zone, id string
		ok           bool
	}{
		{"aws:///us-west-2a/i-0123456789abcdef0", "us-west-2a", "i-0123456789abcdef0", true},
		{"aws:////i-0123456789abcdef0", "", "i-0123456789abcdef0", true},
		{"kwok://node-1", "", "", false},
		{"aws:///us-west-2a/", "", "", false},
		{"aws:///us-west-2a/i-1/extra", "", "", false},
	}
	for _, tt := range tests {
		zone, id, err := instance.ParseProviderID(tt.in)
		if (err == nil) != tt.ok || zone != tt.zone || id != tt.id {
			t.Errorf("ParseProviderID(%q) = %q, %q, %v", tt.in, zone, id, err)
		}
	}
	if got := instance.ProviderID("us-west-2a", "i-1"); got != "aws:///us-west-2a/i-1" {
		t.Errorf("ProviderID = %s", got)
	}
}
