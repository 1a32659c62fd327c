package launchtemplate_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"k8s.io/apimachinery/pkg/api/resource"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	"github.com/joinery-dev/joinery/cloudprovider/aws/amifamily"
	"github.com/joinery-dev/joinery/cloudprovider/aws/launchtemplate"
	"github.com/joinery-dev/joinery/internal/awsemulator"
)

func testSpec(class, image string) launchtemplate.Spec {
	return launchtemplate.Spec{
		ImageID: image, InstanceProfile: "KarpenterNodeInstanceProfile-joinery", SecurityGroupIDs: []string{"sg-b", "sg-a"},
		UserData:            "#!/bin/bash\n/etc/eks/bootstrap.sh joinery\n",
		BlockDeviceMappings: amifamily.DefaultBlockDeviceMappings(awsv1.AMIFamilyAL2023),
		MetadataOptions:     amifamily.DefaultMetadataOptions(),
		DetailedMonitoring:  true, AssociatePublicIPAddress: ptr.To(false),
		Tags: map[string]string{"team": "a"}, NodeClass: class,
	}
}

func TestNameIsDeterministicAndCoversTheSpec(t *testing.T) {
	base := testSpec("default", "ami-1")
	reordered := base
	reordered.SecurityGroupIDs = []string{"sg-a", "sg-b"}
	if base.Name() != reordered.Name() {
		t.Errorf("security group order changed the name")
	}
	variants := map[string]func(*launchtemplate.Spec){
		"image":     func(s *launchtemplate.Spec) { s.ImageID = "ami-2" },
		"user data": func(s *launchtemplate.Spec) { s.UserData += "#\n" },
		"volume size": func(s *launchtemplate.Spec) {
			s.BlockDeviceMappings[0].EBS.VolumeSize = ptr.To(resource.MustParse("21Gi"))
		},
		"hop limit":    func(s *launchtemplate.Spec) { s.MetadataOptions.HTTPPutResponseHopLimit = ptr.To[int64](2) },
		"tags":         func(s *launchtemplate.Spec) { s.Tags = map[string]string{"team": "b"} },
		"reservation":  func(s *launchtemplate.Spec) { s.CapacityReservationID = "cr-1" },
		"public IP":    func(s *launchtemplate.Spec) { s.AssociatePublicIPAddress = nil },
		"node class":   func(s *launchtemplate.Spec) { s.NodeClass = "other" },
		"monitoring":   func(s *launchtemplate.Spec) { s.DetailedMonitoring = false },
		"inst profile": func(s *launchtemplate.Spec) { s.InstanceProfile = "p" },
	}
	for name, mutate := range variants {
		s := testSpec("default", "ami-1")
		mutate(&s)
		if s.Name() == base.Name() {
			t.Errorf("changing the %s kept the name %s", name, base.Name())
		}
	}
	if len(base.Name()) > 128 || base.Name()[:len(launchtemplate.NamePrefix)] != launchtemplate.NamePrefix {
		t.Errorf("name %q", base.Name())
	}
}

func TestCheckClassTags(t *testing.T) {
	for key, ok := range map[string]bool{
		"team": true, "karpenter.sh/nodepool": false, "karpenter.sh/nodeclaim": false, "karpenter.k8s.aws/ec2nodeclass": false,
		"kubernetes.io/cluster/joinery": false, "eks:eks-cluster-name": false, "aws:cloudformation:stack": false, "": false,
	} {
		if err := launchtemplate.CheckClassTags(map[string]string{key: "v"}); (err == nil) != ok {
			t.Errorf("tag %q: err %v, want ok=%v", key, err, ok)
		}
	}
}

type fixture struct {
	srv   *awsemulator.Server
	p     *launchtemplate.Provider
	clock *clocktesting.FakeClock
	image string
	sg    string
}

func newFixture(t *testing.T) fixture {
	srv := awsemulator.NewServer(awsemulator.Options{})
	t.Cleanup(srv.Close)
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC))
	f := fixture{srv: srv, clock: clk, p: launchtemplate.New(ec2.NewFromConfig(srv.Config()), launchtemplate.Options{ClusterName: "joinery", Clock: clk})}
	f.image = srv.Images("custom-ami-amd64")[0].ID
	f.sg = srv.SecurityGroups()[0].ID
	return f
}

func TestEnsureCreatesOnceAndKeepsTheData(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	spec := testSpec("default", f.image)

	var wg sync.WaitGroup
	ids := make([]string, 8)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tmpl, err := f.p.Ensure(ctx, spec)
			if err != nil {
				t.Error(err)
			}
			ids[i] = tmpl.ID
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("concurrent Ensure returned ids %v", ids)
		}
	}
	if n := f.srv.Calls(awsemulator.ServiceEC2, "CreateLaunchTemplate"); n != 1 {
		t.Errorf("CreateLaunchTemplate called %d times, want 1", n)
	}
	lts := f.srv.LaunchTemplates()
	if len(lts) != 1 {
		t.Fatalf("%d templates, want 1", len(lts))
	}
	lt := lts[0]
	d := lt.Data
	if lt.Name != spec.Name() || d.ImageID != f.image || d.UserData != spec.UserData || d.InstanceProfile != spec.InstanceProfile ||
		len(d.SecurityGroupIDs) != 2 || !d.Monitoring || d.AssociatePublicIPAddress == nil || *d.AssociatePublicIPAddress ||
		d.MetadataOptions.HTTPTokens != "required" || d.MetadataOptions.HTTPPutResponseHopLimit != 1 ||
		len(d.BlockDeviceMappings) != 1 || d.BlockDeviceMappings[0].VolumeSizeGiB != 20 || d.BlockDeviceMappings[0].VolumeType != "gp3" ||
		d.BlockDeviceMappings[0].Encrypted == nil || !*d.BlockDeviceMappings[0].Encrypted {
		t.Errorf("template %s data %+v", lt.Name, d)
	}
	for k, v := range map[string]string{"team": "a", "karpenter.k8s.aws/cluster": "joinery", "karpenter.k8s.aws/ec2nodeclass": "default",
		"kubernetes.io/cluster/joinery": "owned", "eks:eks-cluster-name": "joinery"} {
		if lt.Tags[k] != v {
			t.Errorf("template tag %s = %q, want %q", k, lt.Tags[k], v)
		}
	}

	// A second provider (another replica, or after a restart) finds the template by name.
	other := launchtemplate.New(ec2.NewFromConfig(f.srv.Config()), launchtemplate.Options{ClusterName: "joinery"})
	if tmpl, err := other.Ensure(ctx, spec); err != nil || tmpl.ID != ids[0] {
		t.Errorf("second provider: %v %v, want %s", tmpl, err, ids[0])
	}
	if n := f.srv.Calls(awsemulator.ServiceEC2, "CreateLaunchTemplate"); n != 1 {
		t.Errorf("CreateLaunchTemplate called %d times, want 1", n)
	}

	// Deleted behind the provider's back: Invalidate makes the next Ensure recreate it.
	if _, err := ec2.NewFromConfig(f.srv.Config()).DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: &lt.Name}); err != nil {
		t.Fatal(err)
	}
	f.p.Invalidate(spec.Name())
	tmpl, err := f.p.Ensure(ctx, spec)
	if err != nil || tmpl.ID == ids[0] || len(f.srv.LaunchTemplates()) != 1 {
		t.Errorf("after invalidation: %v %v, templates %d", tmpl, err, len(f.srv.LaunchTemplates()))
	}
}

func TestDeleteUnusedAndForNodeClass(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	specs := []launchtemplate.Spec{testSpec("a", f.image), testSpec("b", f.image), testSpec("c", f.image)}
	for _, s := range specs {
		if _, err := f.p.Ensure(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	// Another cluster's template is never touched.
	other := launchtemplate.New(ec2.NewFromConfig(f.srv.Config()), launchtemplate.Options{ClusterName: "other"})
	if _, err := other.Ensure(ctx, testSpec("a", f.image+"x")); err != nil {
		t.Fatal(err)
	}

	f.clock.Step(10 * time.Minute)
	if _, err := f.p.Ensure(ctx, specs[0]); err != nil { // a stays in use
		t.Fatal(err)
	}
	f.clock.Step(10 * time.Minute)
	deleted, err := f.p.DeleteUnused(ctx, 15*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted) != 2 || len(f.srv.LaunchTemplates()) != 2 {
		t.Fatalf("deleted %v, %d templates left, want b and c deleted", deleted, len(f.srv.LaunchTemplates()))
	}
	deleted, err = f.p.DeleteForNodeClass(ctx, "a")
	if err != nil || len(deleted) != 1 || deleted[0] != specs[0].Name() {
		t.Fatalf("DeleteForNodeClass: %v %v", deleted, err)
	}
	left := f.srv.LaunchTemplates()
	if len(left) != 1 || left[0].Tags["karpenter.k8s.aws/cluster"] != "other" {
		t.Errorf("left %+v, want only the other cluster's", left)
	}
}
