package integration

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestEC2NodeClassPlacementGroupAndPrefixValidation(t *testing.T) {
	expectRejections(t, []rejection{
		{name: "placement group by name and id", wantFields: []string{"spec.placementGroupSelector", "expected exactly one of ['name', 'id']"},
			manifest: ec2NodeClass("bad-pg-both", ec2ncBase+"placementGroupSelector:\n  name: training\n  id: pg-0123456789abcdef0\n")},
		{name: "empty placement group selector", wantFields: []string{"spec.placementGroupSelector", "expected exactly one of ['name', 'id']"},
			manifest: ec2NodeClass("bad-pg-empty", ec2ncBase+"placementGroupSelector: {}\n")},
		{name: "malformed placement group id", wantFields: []string{"spec.placementGroupSelector.id"},
			manifest: ec2NodeClass("bad-pg-id", ec2ncBase+"placementGroupSelector:\n  id: training\n")},
		{name: "empty placement group name", wantFields: []string{"spec.placementGroupSelector.name"},
			manifest: ec2NodeClass("bad-pg-name", ec2ncBase+"placementGroupSelector:\n  name: \"\"\n")},
		{name: "negative ipPrefixCount", wantFields: []string{"spec.ipPrefixCount", "greater than or equal to 0"},
			manifest: ec2NodeClass("bad-prefix-count", ec2ncBase+"ipPrefixCount: -1\n")},
	})

	accepted := []struct {
		name     string
		manifest string
		check    func(t *testing.T, obj *unstructured.Unstructured)
	}{
		{name: "placement group by name", manifest: ec2NodeClass("pg-by-name", ec2ncBase+"placementGroupSelector:\n  name: training\n"),
			check: func(t *testing.T, obj *unstructured.Unstructured) {
				expectStoredString(t, obj, "training", "spec", "placementGroupSelector", "name")
			}},
		{name: "placement group by id", manifest: ec2NodeClass("pg-by-id", ec2ncBase+"placementGroupSelector:\n  id: pg-0123456789abcdef0\n"),
			check: func(t *testing.T, obj *unstructured.Unstructured) {
				expectStoredString(t, obj, "pg-0123456789abcdef0", "spec", "placementGroupSelector", "id")
			}},
		{name: "zero prefixes", manifest: ec2NodeClass("prefix-zero", ec2ncBase+"ipPrefixCount: 0\n"),
			check: func(t *testing.T, obj *unstructured.Unstructured) {
				expectStoredInt(t, obj, 0, "spec", "ipPrefixCount")
			}},
	}
	for _, tt := range accepted {
		t.Run(tt.name, func(t *testing.T) {
			obj := mustApply(t, tt.manifest)
			tt.check(t, obj)
		})
	}
}
