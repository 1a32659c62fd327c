package awsemulator

import (
	"context"
	"encoding/base64"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func ec2Filter(name string, values ...string) ec2types.Filter {
	return ec2types.Filter{Name: aws.String(name), Values: values}
}

// launchFixture is what a launch needs from the seeded account: a private subnet per zone, the
// shared node security group, the node instance profile and an x86_64 and an arm64 image.
type launchFixture struct {
	subnets      map[string]Subnet // by zone
	sg           string
	profile      string
	amd64, arm64 string
}

func newLaunchFixture(t *testing.T, srv *Server) launchFixture {
	t.Helper()
	f := launchFixture{subnets: map[string]Subnet{}, profile: "KarpenterNodeInstanceProfile-" + DefaultClusterName}
	for _, sn := range srv.Subnets() {
		if sn.Tags["karpenter.sh/discovery"] == DefaultClusterName {
			f.subnets[sn.Zone] = sn
		}
	}
	for _, sg := range srv.SecurityGroups() {
		if sg.Tags["Name"] == DefaultClusterName+"-shared-node" {
			f.sg = sg.ID
		}
	}
	for _, img := range srv.Images("custom-ami-*") {
		switch img.Architecture {
		case "x86_64":
			f.amd64 = img.ID
		case "arm64":
			f.arm64 = img.ID
		}
	}
	if len(f.subnets) < 3 || f.sg == "" || f.amd64 == "" || f.arm64 == "" {
		t.Fatalf("seeded account lacks launch resources: %+v", f)
	}
	return f
}

func (f launchFixture) createTemplate(t *testing.T, client *ec2.Client, name, imageID string, mutate ...func(*ec2types.RequestLaunchTemplateData)) string {
	t.Helper()
	data := &ec2types.RequestLaunchTemplateData{
		ImageId:            aws.String(imageID),
		IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(f.profile)},
		SecurityGroupIds:   []string{f.sg},
		UserData:           aws.String(base64.StdEncoding.EncodeToString([]byte("#!/bin/bash\necho hello\n"))),
		MetadataOptions: &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
			HttpTokens: ec2types.LaunchTemplateHttpTokensStateRequired, HttpPutResponseHopLimit: aws.Int32(1),
			HttpEndpoint: ec2types.LaunchTemplateInstanceMetadataEndpointStateEnabled,
		},
		BlockDeviceMappings: []ec2types.LaunchTemplateBlockDeviceMappingRequest{{
			DeviceName: aws.String("/dev/xvda"),
			Ebs:        &ec2types.LaunchTemplateEbsBlockDeviceRequest{VolumeSize: aws.Int32(20), VolumeType: ec2types.VolumeTypeGp3, Encrypted: aws.Bool(true)},
		}},
		Monitoring: &ec2types.LaunchTemplatesMonitoringRequest{Enabled: aws.Bool(true)},
		TagSpecifications: []ec2types.LaunchTemplateTagSpecificationRequest{
			{ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{{Key: aws.String("Name"), Value: aws.String("node")}}},
			{ResourceType: ec2types.ResourceTypeVolume, Tags: []ec2types.Tag{{Key: aws.String("team"), Value: aws.String("a")}}},
		},
	}
	for _, m := range mutate {
		m(data)
	}
	out, err := client.CreateLaunchTemplate(context.Background(), &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: data,
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: []ec2types.Tag{
			{Key: aws.String("karpenter.k8s.aws/cluster"), Value: aws.String(DefaultClusterName)},
		}}},
	})
	if err != nil {
		t.Fatalf("CreateLaunchTemplate %s: %v", name, err)
	}
	return aws.ToString(out.LaunchTemplate.LaunchTemplateId)
}

func TestLaunchTemplateLifecycle(t *testing.T) {
	srv := NewServer(Options{})
	defer srv.Close()
	client := ec2.NewFromConfig(srv.Config())
	ctx := context.Background()
	f := newLaunchFixture(t, srv)

	id := f.createTemplate(t, client, "karpenter.k8s.aws/abc", f.amd64, func(d *ec2types.RequestLaunchTemplateData) {
		d.NetworkInterfaces = []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{{
			DeviceIndex: aws.Int32(0), AssociatePublicIpAddress: aws.Bool(false), Groups: []string{f.sg},
		}}
		d.SecurityGroupIds = nil
	})
	f.createTemplate(t, client, "other-template", f.arm64)

	_, err := client.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String("karpenter.k8s.aws/abc"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String(f.amd64)},
	})
	if got := errorCode(err); got != "InvalidLaunchTemplateName.AlreadyExistsException" {
		t.Errorf("duplicate name: %v, want InvalidLaunchTemplateName.AlreadyExistsException", err)
	}

	kept := srv.LaunchTemplates()
	if len(kept) != 2 {
		t.Fatalf("LaunchTemplates() = %d, want 2", len(kept))
	}
	var lt LaunchTemplate
	for _, k := range kept {
		if k.ID == id {
			lt = k
		}
	}
	d := lt.Data
	if d.ImageID != f.amd64 || d.InstanceProfile != f.profile || d.UserData != "#!/bin/bash\necho hello\n" || !d.Monitoring ||
		d.AssociatePublicIPAddress == nil || *d.AssociatePublicIPAddress || len(d.SecurityGroupIDs) != 1 || d.SecurityGroupIDs[0] != f.sg ||
		d.MetadataOptions.HTTPTokens != "required" || d.MetadataOptions.HTTPPutResponseHopLimit != 1 ||
		len(d.BlockDeviceMappings) != 1 || d.BlockDeviceMappings[0].VolumeSizeGiB != 20 || d.BlockDeviceMappings[0].VolumeType != "gp3" ||
		d.TagSpecifications["instance"]["Name"] != "node" || d.TagSpecifications["volume"]["team"] != "a" ||
		lt.Tags["karpenter.k8s.aws/cluster"] != DefaultClusterName {
		t.Errorf("template data not kept: %+v tags %v", d, lt.Tags)
	}

	tests := []struct {
		name string
		in   *ec2.DescribeLaunchTemplatesInput
		want []string
		code string
	}{
		{name: "by name", in: &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{"karpenter.k8s.aws/abc"}}, want: []string{"karpenter.k8s.aws/abc"}},
		{name: "by id", in: &ec2.DescribeLaunchTemplatesInput{LaunchTemplateIds: []string{id}}, want: []string{"karpenter.k8s.aws/abc"}},
		{name: "by tag", in: &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{ec2Filter("tag:karpenter.k8s.aws/cluster", DefaultClusterName)}}, want: []string{"karpenter.k8s.aws/abc", "other-template"}},
		{name: "by name filter", in: &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{ec2Filter("launch-template-name", "karpenter.k8s.aws/*")}}, want: []string{"karpenter.k8s.aws/abc"}},
		{name: "tag-key no match", in: &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{ec2Filter("tag-key", "nope")}}},
		{name: "unknown name", in: &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{"missing"}}, code: "InvalidLaunchTemplateName.NotFoundException"},
		{name: "unknown id", in: &ec2.DescribeLaunchTemplatesInput{LaunchTemplateIds: []string{"lt-0123456789abcdef0"}}, code: "InvalidLaunchTemplateId.NotFound"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := client.DescribeLaunchTemplates(ctx, tt.in)
			if tt.code != "" {
				if errorCode(err) != tt.code {
					t.Fatalf("err = %v, want %s", err, tt.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, lt := range out.LaunchTemplates {
				got = append(got, aws.ToString(lt.LaunchTemplateName))
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] && !(len(tt.want) == 2 && got[1-i] == tt.want[i]) {
					t.Fatalf("got %v, want %v", got, tt.want)
				}
			}
		})
	}

	if _, err := client.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String("karpenter.k8s.aws/abc")}); err != nil {
		t.Fatal(err)
	}
	_, err = client.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateId: aws.String(id)})
	if errorCode(err) != "InvalidLaunchTemplateId.NotFound" {
		t.Errorf("deleting twice: %v, want InvalidLaunchTemplateId.NotFound", err)
	}
	if n := len(srv.LaunchTemplates()); n != 1 {
		t.Errorf("%d templates left, want 1", n)
	}
}
