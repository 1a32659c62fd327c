package awsemulator

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

func filter(name string, values ...string) ec2types.Filter {
	return ec2types.Filter{Name: aws.String(name), Values: values}
}

func TestWildcardMatch(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true},
		{"*Public*", "joinery-Public-us-west-2a", true},
		{"*Public*", "joinery-private-us-west-2a", false},
		{"amazon-eks-node-al2023-*-standard-1.33-*", "amazon-eks-node-al2023-arm64-standard-1.33-v20250715", true},
		{"my-ami", "my-ami", true},
		{"my-ami", "my-ami-2", false},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"*a*b", "xxaxxbxb", true},
	}
	for _, tt := range tests {
		if got := wildcardMatch(tt.pattern, tt.s); got != tt.want {
			t.Errorf("wildcardMatch(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

func TestDescribeSubnetsFiltersAndPages(t *testing.T) {
	srv := NewServer(Options{})
	defer srv.Close()
	client := ec2.NewFromConfig(srv.Config())
	ctx := context.Background()

	tests := []struct {
		name    string
		filters []ec2types.Filter
		want    int
	}{
		{"discovery tag", []ec2types.Filter{filter("tag:karpenter.sh/discovery", DefaultClusterName)}, 3},
		{"two tags ANDed", []ec2types.Filter{filter("tag:karpenter.sh/discovery", DefaultClusterName), filter("tag:environment", "test")}, 2},
		{"wildcard tag value", []ec2types.Filter{filter("tag:Name", "*Public*")}, 3},
		{"tag-key", []ec2types.Filter{filter("tag-key", "kubernetes.io/role/elb")}, 3},
		{"values ORed", []ec2types.Filter{filter("availability-zone", "us-west-2a", "us-west-2b")}, 6},
		{"zone id", []ec2types.Filter{filter("availability-zone-id", "usw2-az1")}, 3},
		{"nothing", []ec2types.Filter{filter("tag:Name", "nope")}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: tt.filters})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Subnets) != tt.want {
				t.Errorf("subnets = %d, want %d", len(out.Subnets), tt.want)
			}
			for _, sn := range out.Subnets {
				if aws.ToString(sn.AvailabilityZoneId) == "" || aws.ToInt32(sn.AvailableIpAddressCount) == 0 {
					t.Errorf("subnet %s lacks zone id or free IPs", aws.ToString(sn.SubnetId))
				}
			}
		})
	}

	var all []string
	pager := ec2.NewDescribeSubnetsPaginator(client, &ec2.DescribeSubnetsInput{MaxResults: aws.Int32(5)})
	pages := 0
	for pager.HasMorePages() {
		out, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, sn := range out.Subnets {
			all = append(all, aws.ToString(sn.SubnetId))
		}
	}
	if want := len(srv.Subnets()); len(all) != want || pages != (want+4)/5 {
		t.Errorf("paged %d subnets in %d pages, want %d in %d", len(all), pages, want, (want+4)/5)
	}

	if _, err := client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{"subnet-0000000000000dead"}}); errorCode(err) != "InvalidSubnetID.NotFound" {
		t.Errorf("unknown subnet id: %v, want InvalidSubnetID.NotFound", err)
	}
	if _, err := client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{filter("bogus", "x")}}); errorCode(err) != "InvalidParameterValue" {
		t.Errorf("unknown filter: %v, want InvalidParameterValue", err)
	}
}

func TestDescribeSecurityGroupsByNameAndTag(t *testing.T) {
	srv := NewServer(Options{Region: "us-east-1"})
	defer srv.Close()
	client := ec2.NewFromConfig(srv.Config())
	out, err := client.DescribeSecurityGroups(context.Background(), &ec2.DescribeSecurityGroupsInput{
		Filters: []ec2types.Filter{filter("group-name", "*Public*")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.SecurityGroups) != 1 || aws.ToString(out.SecurityGroups[0].GroupName) != "k8s-elb-Public-web" {
		t.Errorf("groups = %+v", out.SecurityGroups)
	}
	out, err = client.DescribeSecurityGroups(context.Background(), &ec2.DescribeSecurityGroupsInput{
		Filters: []ec2types.Filter{filter("tag:kubernetes.io/cluster/"+DefaultClusterName, "owned")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.SecurityGroups) != 2 {
		t.Errorf("cluster-owned groups = %d, want 2", len(out.SecurityGroups))
	}
}

func TestDescribeImagesOwnersDeprecationAndTags(t *testing.T) {
	srv := NewServer(Options{})
	defer srv.Close()
	client := ec2.NewFromConfig(srv.Config())
	ctx := context.Background()
	srv.SetClock(func() time.Time { return day(2026, 11, 30) })

	names := func(in *ec2.DescribeImagesInput) []string {
		t.Helper()
		var out []string
		pager := ec2.NewDescribeImagesPaginator(client, in)
		for pager.HasMorePages() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, img := range page.Images {
				out = append(out, aws.ToString(img.Name)+"/"+aws.ToString(img.OwnerId))
			}
		}
		sort.Strings(out)
		return out
	}

	if got := names(&ec2.DescribeImagesInput{Filters: []ec2types.Filter{filter("name", "my-ami")}, Owners: []string{"self", "amazon"}}); len(got) != 1 || got[0] != "my-ami/"+AccountID {
		t.Errorf("my-ami with owners self,amazon = %v, want only the account's own", got)
	}
	if got := names(&ec2.DescribeImagesInput{Filters: []ec2types.Filter{filter("name", "my-ami")}}); len(got) != 2 {
		t.Errorf("my-ami with no owners = %v, want both the own and the other account's public one", got)
	}
	if got := names(&ec2.DescribeImagesInput{Filters: []ec2types.Filter{filter("name", "legacy-ami")}}); len(got) != 0 {
		t.Errorf("deprecated image listed without IncludeDeprecated: %v", got)
	}
	if got := names(&ec2.DescribeImagesInput{Filters: []ec2types.Filter{filter("name", "legacy-ami")}, IncludeDeprecated: aws.Bool(true)}); len(got) != 1 {
		t.Errorf("deprecated image with IncludeDeprecated = %v", got)
	}
	if got := names(&ec2.DescribeImagesInput{Filters: []ec2types.Filter{filter("tag:karpenter.sh/discovery", DefaultClusterName), filter("tag:environment", "test")}}); len(got) != 3 {
		t.Errorf("tagged custom images = %v, want 3", got)
	}
	// AWS's images carry no tags visible to the account, so tag-key * finds only its own.
	for _, n := range names(&ec2.DescribeImagesInput{Filters: []ec2types.Filter{filter("tag-key", "*")}, MaxResults: aws.Int32(50)}) {
		if n[len(n)-len(AccountID):] != AccountID {
			t.Errorf("tag filter matched another account's image %s", n)
		}
	}
	al2023 := names(&ec2.DescribeImagesInput{Owners: []string{"amazon"}, Filters: []ec2types.Filter{filter("name", "amazon-eks-node-al2023-*-1.33-v20261112")}})
	if len(al2023) != 5 {
		t.Errorf("AL2023 1.33 v20261112 images = %v, want 5 variants", al2023)
	}
}

func TestSSMParametersForAliases(t *testing.T) {
	srv := NewServer(Options{})
	defer srv.Close()
	client := ssm.NewFromConfig(srv.Config())
	ec2Client := ec2.NewFromConfig(srv.Config())
	ctx := context.Background()

	tests := []struct {
		param    string
		wantName string
	}{
		{"/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/recommended/image_id", "amazon-eks-node-al2023-x86_64-standard-1.33-v20261112"},
		{"/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/nvidia/recommended/image_id", "amazon-eks-node-al2023-x86_64-nvidia-1.33-v20261112"},
		{"/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/arm64/standard/amazon-eks-node-al2023-arm64-standard-1.30-v20240807/image_id", "amazon-eks-node-al2023-arm64-standard-1.30-v20240807"},
		{"/aws/service/eks/optimized-ami/1.32/amazon-linux-2/recommended/image_id", "amazon-eks-node-1.32-v20251023"},
		{"/aws/service/eks/optimized-ami/1.32/amazon-linux-2-arm64/recommended/image_id", "amazon-eks-arm64-node-1.32-v20251023"},
		{"/aws/service/eks/optimized-ami/1.30/amazon-linux-2-gpu/amazon-eks-gpu-node-1.30-v20240807/image_id", "amazon-eks-gpu-node-1.30-v20240807"},
		{"/aws/service/bottlerocket/aws-k8s-1.33/x86_64/latest/image_id", "bottlerocket-aws-k8s-1.33-x86_64-v1.62.0-a1d5f9e8"},
		{"/aws/service/bottlerocket/aws-k8s-1.33-nvidia/arm64/latest/image_id", "bottlerocket-aws-k8s-1.33-nvidia-arm64-v1.62.0-a1d5f9e8"},
		{"/aws/service/bottlerocket/aws-k8s-1.30/x86_64/1.20.4/image_id", "bottlerocket-aws-k8s-1.30-x86_64-v1.20.4-7c3e9198"},
		{"/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.33/image_id", "Windows_Server-2022-English-Core-EKS_Optimized-1.33-2026.11.12"},
		{"arn:aws:ssm:us-west-2:111122223333:parameter/my-custom-parameter", "custom-ami-amd64"},
	}
	for _, tt := range tests {
		t.Run(tt.param, func(t *testing.T) {
			out, err := client.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(tt.param)})
			if err != nil {
				t.Fatal(err)
			}
			images, err := ec2Client.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{aws.ToString(out.Parameter.Value)}})
			if err != nil {
				t.Fatal(err)
			}
			if len(images.Images) != 1 || aws.ToString(images.Images[0].Name) != tt.wantName {
				t.Errorf("parameter points at %v, want %s", images.Images, tt.wantName)
			}
		})
	}

	if _, err := client.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/aws/service/eks/optimized-ami/1.33/amazon-linux-2/recommended/image_id")}); errorCode(err) != "ParameterNotFound" {
		t.Errorf("AL2 for 1.33: %v, want ParameterNotFound (AWS publishes no AL2 AMIs for 1.33)", err)
	}
	many, err := client.GetParameters(ctx, &ssm.GetParametersInput{Names: []string{"my-custom-parameter", "/nope"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(many.Parameters) != 1 || len(many.InvalidParameters) != 1 || many.InvalidParameters[0] != "/nope" {
		t.Errorf("GetParameters = %+v / invalid %v", many.Parameters, many.InvalidParameters)
	}
}

// TestParametersByPathListPinnableVersions follows the seed's recipe for the versions an alias
// can pin (get-parameters-by-path --recursive, leaving out "recommended").
func TestParametersByPathListPinnableVersions(t *testing.T) {
	srv := NewServer(Options{})
	defer srv.Close()
	client := ssm.NewFromConfig(srv.Config())
	var versions []string
	pager := ssm.NewGetParametersByPathPaginator(client, &ssm.GetParametersByPathInput{
		Path: aws.String("/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/"), Recursive: aws.Bool(true),
	})
	for pager.HasMorePages() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range page.Parameters {
			name := aws.ToString(p.Name)
			if strings.Contains(name, "recommended") || !strings.Contains(name, "/x86_64/standard/") {
				continue
			}
			versions = append(versions, name[strings.LastIndex(name, "-")+1:strings.LastIndex(name, "/")])
		}
	}
	sort.Strings(versions)
	// 1.32 launched 2025-01-23: every later release until its support window ends.
	want := []string{"v20250519", "v20250715", "v20251023", "v20260311", "v20261112"}
	if strings.Join(versions, ",") != strings.Join(want, ",") {
		t.Errorf("pinnable AL2023 versions for 1.32 = %v, want %v", versions, want)
	}
	direct, err := client.GetParametersByPath(context.Background(), &ssm.GetParametersByPathInput{Path: aws.String("/aws/service/eks/optimized-ami/1.32/amazon-linux-2023/")})
	if err != nil {
		t.Fatal(err)
	}
	if len(direct.Parameters) != 0 {
		t.Errorf("non-recursive listing returned %d nested parameters", len(direct.Parameters))
	}
}

func TestDescribeCapacityReservations(t *testing.T) {
	srv := NewServer(Options{})
	defer srv.Close()
	client := ec2.NewFromConfig(srv.Config())
	out, err := client.DescribeCapacityReservations(context.Background(), &ec2.DescribeCapacityReservationsInput{
		Filters: []ec2types.Filter{filter("tag:karpenter.sh/discovery", DefaultClusterName), filter("state", "active")},
	})
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]ec2types.CapacityReservationType{}
	for _, cr := range out.CapacityReservations {
		types[aws.ToString(cr.InstanceType)] = cr.ReservationType
	}
	if len(types) != 2 || types["m5.large"] != ec2types.CapacityReservationTypeDefault || types["p5.48xlarge"] != ec2types.CapacityReservationTypeCapacityBlock {
		t.Errorf("active discovered reservations = %v", types)
	}
	shared, err := client.DescribeCapacityReservations(context.Background(), &ec2.DescribeCapacityReservationsInput{
		Filters: []ec2types.Filter{filter("owner-id", OtherAccountID)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(shared.CapacityReservations) != 1 || aws.ToString(shared.CapacityReservations[0].InstanceType) != "g6.48xlarge" {
		t.Errorf("shared reservations = %+v", shared.CapacityReservations)
	}
}

func TestInstanceProfileLifecycle(t *testing.T) {
	srv := NewServer(Options{})
	defer srv.Close()
	client := iam.NewFromConfig(srv.Config())
	ctx := context.Background()
	name := aws.String("joinery-profile")
	role := "KarpenterNodeRole-" + DefaultClusterName

	if _, err := client.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: name}); errorCode(err) != "NoSuchEntity" {
		t.Fatalf("get before create: %v", err)
	}
	created, err := client.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: name,
		Tags: []iamtypes.Tag{{Key: aws.String("karpenter.sh/managed-by"), Value: aws.String(DefaultClusterName)}}})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(created.InstanceProfile.Arn) != "arn:aws:iam::"+AccountID+":instance-profile/joinery-profile" {
		t.Errorf("arn = %s", aws.ToString(created.InstanceProfile.Arn))
	}
	if _, err := client.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: name}); errorCode(err) != "EntityAlreadyExists" {
		t.Errorf("second create: %v", err)
	}
	if _, err := client.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: name, RoleName: aws.String("missing")}); errorCode(err) != "NoSuchEntity" {
		t.Errorf("add missing role: %v", err)
	}
	if _, err := client.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: name, RoleName: aws.String(role)}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: name, RoleName: aws.String(role)}); errorCode(err) != "LimitExceeded" {
		t.Errorf("second role: %v", err)
	}
	if _, err := client.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{InstanceProfileName: name, Tags: []iamtypes.Tag{{Key: aws.String("a"), Value: aws.String("b")}}}); err != nil {
		t.Fatal(err)
	}
	got, err := client.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: name})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.InstanceProfile.Roles) != 1 || aws.ToString(got.InstanceProfile.Roles[0].RoleName) != role || len(got.InstanceProfile.Tags) != 2 {
		t.Errorf("profile = roles %v tags %v", got.InstanceProfile.Roles, got.InstanceProfile.Tags)
	}
	forRole, err := client.ListInstanceProfilesForRole(ctx, &iam.ListInstanceProfilesForRoleInput{RoleName: aws.String(role)})
	if err != nil {
		t.Fatal(err)
	}
	if len(forRole.InstanceProfiles) != 2 {
		t.Errorf("profiles for role = %d, want 2 (seeded and created)", len(forRole.InstanceProfiles))
	}
	if _, err := client.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: name}); errorCode(err) != "DeleteConflict" {
		t.Errorf("delete with role: %v", err)
	}
	if _, err := client.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: name, RoleName: aws.String(role)}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: name}); err != nil {
		t.Fatal(err)
	}
	srv.SetInstanceProfileQuota(1)
	if _, err := client.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: name}); errorCode(err) != "LimitExceeded" {
		t.Errorf("create beyond quota: %v", err)
	}
	if _, err := client.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(role)}); err != nil {
		t.Errorf("get role: %v", err)
	}
}
