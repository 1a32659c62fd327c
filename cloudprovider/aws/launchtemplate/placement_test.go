package launchtemplate_test

import (
	"context"
	"slices"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/joinery-dev/joinery/cloudprovider/aws/launchtemplate"
)

// The placement group and the prefix count reach EC2 through the template: the group in its
// Placement, the prefixes on the primary interface, which then carries the security groups.
func TestTemplatePlacementGroupAndPrefixes(t *testing.T) {
	tests := []struct {
		name         string
		edit         func(*launchtemplate.Spec)
		wantGroup    string
		wantPrefixes int32
	}{
		{name: "neither", edit: func(*launchtemplate.Spec) {}},
		{name: "placement group", edit: func(s *launchtemplate.Spec) { s.PlacementGroupID = "pg-0a1b2c" }, wantGroup: "pg-0a1b2c"},
		{name: "prefixes without a public IP setting", edit: func(s *launchtemplate.Spec) {
			s.AssociatePublicIPAddress = nil
			s.IPv4PrefixCount = ptr.To[int32](3)
		}, wantPrefixes: 3},
		{name: "both", edit: func(s *launchtemplate.Spec) {
			s.PlacementGroupID = "pg-0a1b2c"
			s.IPv4PrefixCount = ptr.To[int32](1)
		}, wantGroup: "pg-0a1b2c", wantPrefixes: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			spec := testSpec("default", f.image)
			tt.edit(&spec)
			if tt.wantGroup != "" || tt.wantPrefixes != 0 {
				if spec.Name() == testSpec("default", f.image).Name() {
					t.Error("the name does not cover the placement group and prefixes")
				}
			}
			if _, err := f.p.Ensure(context.Background(), spec); err != nil {
				t.Fatal(err)
			}
			d := f.srv.LaunchTemplates()[0].Data
			if d.PlacementGroupID != tt.wantGroup || d.IPv4PrefixCount != tt.wantPrefixes {
				t.Errorf("template placement group %q, prefixes %d; want %q, %d", d.PlacementGroupID, d.IPv4PrefixCount, tt.wantGroup, tt.wantPrefixes)
			}
			if !slices.Equal(slices.Sorted(slices.Values(d.SecurityGroupIDs)), []string{"sg-a", "sg-b"}) {
				t.Errorf("security groups %v, want both on the template or its interface", d.SecurityGroupIDs)
			}
		})
	}
}
