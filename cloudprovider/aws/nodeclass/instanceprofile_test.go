package nodeclass

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	"github.com/joinery-dev/joinery/internal/awsemulator"
)

const nodeRole = "KarpenterNodeRole-" + awsemulator.DefaultClusterName

func roleClass(name, role string) *awsv1.EC2NodeClass {
	return &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: awsv1.EC2NodeClassSpec{Role: role}}
}

func TestInstanceProfileNameIsStableAndDistinct(t *testing.T) {
	e := newEnv(t, "1.33")
	a := e.resolver.InstanceProfileName(roleClass("default", nodeRole))
	if a != e.resolver.InstanceProfileName(roleClass("default", "another-role")) {
		t.Error("the name depends on the role; it must depend only on cluster, region and class")
	}
	if a == e.resolver.InstanceProfileName(roleClass("gpu", nodeRole)) {
		t.Error("two classes share a profile name")
	}
	if !strings.HasPrefix(a, awsemulator.DefaultClusterName+"-") {
		t.Errorf("name %q does not start with the cluster name", a)
	}
	long := &Resolver{opts: Options{ClusterName: strings.Repeat("c", 200), Region: "us-west-2"}}
	if n := long.InstanceProfileName(roleClass("default", nodeRole)); len(n) > 128 {
		t.Errorf("name of %d characters exceeds IAM's 128", len(n))
	}
}

func TestManagedInstanceProfileLifecycle(t *testing.T) {
	e := newEnv(t, "1.33")
	ctx := context.Background()
	nc := roleClass("default", nodeRole)

	name, err := e.resolver.InstanceProfile(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	profile, ok := e.srv.InstanceProfile(name)
	if !ok {
		t.Fatalf("profile %s was not created", name)
	}
	wantTags := map[string]string{
		"karpenter.sh/managed-by":                                 awsemulator.DefaultClusterName,
		"karpenter.k8s.aws/ec2nodeclass":                          "default",
		"kubernetes.io/cluster/" + awsemulator.DefaultClusterName: "owned",
		"topology.kubernetes.io/region":                           e.srv.Region,
	}
	for k, v := range wantTags {
		if profile.Tags[k] != v {
			t.Errorf("tag %s = %q, want %q", k, profile.Tags[k], v)
		}
	}
	if len(profile.Roles) != 1 || profile.Roles[0] != nodeRole {
		t.Errorf("roles = %v, want [%s]", profile.Roles, nodeRole)
	}

	// A second resolution changes nothing.
	if again, err := e.resolver.InstanceProfile(ctx, nc); err != nil || again != name {
		t.Fatalf("second resolution: %q, %v", again, err)
	}
	if n := e.srv.Calls(awsemulator.ServiceIAM, "CreateInstanceProfile"); n != 1 {
		t.Errorf("CreateInstanceProfile calls = %d, want 1", n)
	}
	if n := e.srv.Calls(awsemulator.ServiceIAM, "AddRoleToInstanceProfile"); n != 1 {
		t.Errorf("AddRoleToInstanceProfile calls = %d, want 1", n)
	}

	// Someone swaps the role out of band: joinery puts the class's role back.
	e.srv.AddRole("intruder")
	if err := e.srv.SetInstanceProfileRole(name, "intruder"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.resolver.InstanceProfile(ctx, nc); err != nil {
		t.Fatal(err)
	}
	if profile, _ := e.srv.InstanceProfile(name); len(profile.Roles) != 1 || profile.Roles[0] != nodeRole {
		t.Errorf("roles after repair = %v, want [%s]", profile.Roles, nodeRole)
	}

	if err := e.resolver.DeleteInstanceProfile(ctx, nc); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.srv.InstanceProfile(name); ok {
		t.Error("the managed profile survived its deletion")
	}
	if err := e.resolver.DeleteInstanceProfile(ctx, nc); err != nil {
		t.Errorf("deleting a profile that is gone: %v", err)
	}
}

func TestDeleteLeavesUnmanagedProfilesAlone(t *testing.T) {
	e := newEnv(t, "1.33")
	nc := roleClass("default", nodeRole)
	name := e.resolver.InstanceProfileName(nc)
	e.srv.AddInstanceProfile(name, nodeRole) // same name, but no managed-by tags
	if err := e.resolver.DeleteInstanceProfile(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.srv.InstanceProfile(name); !ok {
		t.Error("deleted a profile joinery did not tag as its own")
	}
}

func TestInstanceProfileFailures(t *testing.T) {
	tests := []struct {
		name      string
		nc        *awsv1.EC2NodeClass
		wantClass Class
		wantCode  string
		wantText  string
	}{
		{"role missing", roleClass("default", "NoSuchRole"), ClassNotFound, "NoSuchEntity", "NoSuchRole"},
		{"given profile missing", &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: awsv1.EC2NodeClassSpec{InstanceProfile: ptr.To("NoSuchProfile")}},
			ClassNotFound, "NoSuchEntity", "NoSuchProfile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, "1.33")
			_, err := e.resolver.InstanceProfile(context.Background(), tt.nc)
			c := Classify(err)
			if c.Class != tt.wantClass || c.Code != tt.wantCode || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("err = %v classified %+v; want %s/%s mentioning %q", err, c, tt.wantClass, tt.wantCode, tt.wantText)
			}
		})
	}
}

func TestGivenInstanceProfileIsUsedAsIs(t *testing.T) {
	e := newEnv(t, "1.33")
	given := "KarpenterNodeInstanceProfile-" + awsemulator.DefaultClusterName // seed line 91
	nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: awsv1.EC2NodeClassSpec{InstanceProfile: ptr.To(given)}}
	name, err := e.resolver.InstanceProfile(context.Background(), nc)
	if err != nil || name != given {
		t.Fatalf("profile = %q, %v", name, err)
	}
	if n := e.srv.Calls(awsemulator.ServiceIAM, "CreateInstanceProfile") + e.srv.Calls(awsemulator.ServiceIAM, "AddRoleToInstanceProfile"); n != 0 {
		t.Errorf("%d IAM writes for a profile joinery must not manage", n)
	}
	if err := e.resolver.DeleteInstanceProfile(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.srv.InstanceProfile(given); !ok {
		t.Error("deleted the user's own instance profile")
	}
}
