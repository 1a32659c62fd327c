package nodeclass

import (
	"context"
	"testing"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	"github.com/joinery-dev/joinery/internal/awsemulator"
)

func TestPlacementGroupsResolveOneGroup(t *testing.T) {
	e := newEnv(t, "1.33")
	cluster, err := e.srv.AddPlacementGroup(awsemulator.PlacementGroup{Name: "training", Strategy: "cluster"})
	if err != nil {
		t.Fatal(err)
	}
	kafka, err := e.srv.AddPlacementGroup(awsemulator.PlacementGroup{Name: "kafka", Strategy: "partition", PartitionCount: 5})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.srv.AddPlacementGroup(awsemulator.PlacementGroup{Name: "draining", Strategy: "spread", State: "deleting"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		sel     *awsv1.PlacementGroupSelector
		want    []awsv1.PlacementGroup
		noMatch bool
	}{
		{name: "no selector resolves to nothing", sel: nil},
		{name: "by name", sel: &awsv1.PlacementGroupSelector{Name: "training"},
			want: []awsv1.PlacementGroup{{ID: cluster.ID, Name: "training", Strategy: awsv1.PlacementGroupStrategyCluster, State: "available"}}},
		{name: "by id, with the partition count", sel: &awsv1.PlacementGroupSelector{ID: kafka.ID},
			want: []awsv1.PlacementGroup{{ID: kafka.ID, Name: "kafka", Strategy: awsv1.PlacementGroupStrategyPartition, PartitionCount: 5, State: "available"}}},
		{name: "unknown name", sel: &awsv1.PlacementGroupSelector{Name: "nope"}, noMatch: true},
		{name: "unknown id", sel: &awsv1.PlacementGroupSelector{ID: "pg-0123456789abcdef0"}, noMatch: true},
		{name: "a group that is not available", sel: &awsv1.PlacementGroupSelector{Name: "draining"}, noMatch: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{PlacementGroupSelector: tt.sel}}
			nc.Name = "default"
			got, err := e.resolver.PlacementGroups(context.Background(), nc)
			if tt.noMatch {
				if !errorsAsNoMatch(err) || Classify(err).Class != ClassNoMatch {
					t.Fatalf("PlacementGroups = %v, %v; want a NoMatchError", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) || len(got) == 1 && got[0] != tt.want[0] {
				t.Errorf("PlacementGroups = %+v, want %+v", got, tt.want)
			}
		})
	}
}
