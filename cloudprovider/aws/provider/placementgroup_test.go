package provider_test

import (
	"context"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/aws/instance"
	"github.com/joinery-dev/joinery/cloudprovider/aws/provider"
	"github.com/joinery-dev/joinery/internal/awsemulator"
)

// withGroup adds a placement group to the emulator and makes the class resolve to it, as the
// EC2NodeClass controller would.
func (e *env) withGroup(t *testing.T, pg awsemulator.PlacementGroup, edit ...func(*awsv1.EC2NodeClass)) awsemulator.PlacementGroup {
	t.Helper()
	added, err := e.srv.AddPlacementGroup(pg)
	if err != nil {
		t.Fatal(err)
	}
	e.updateClass(t, func(c *awsv1.EC2NodeClass) {
		c.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelector{Name: added.Name}
		c.Status.PlacementGroups = []awsv1.PlacementGroup{{
			ID: added.ID, Name: added.Name, Strategy: awsv1.PlacementGroupStrategy(added.Strategy), PartitionCount: added.PartitionCount, State: added.State,
		}}
		for _, ed := range edit {
			ed(c)
		}
	})
	return added
}

func (e *env) updateClass(t *testing.T, edit func(*awsv1.EC2NodeClass)) {
	t.Helper()
	ctx := context.Background()
	class := &awsv1.EC2NodeClass{}
	if err := e.kube.Get(ctx, client.ObjectKey{Name: "default"}, class); err != nil {
		t.Fatal(err)
	}
	edit(class)
	if err := e.kube.Update(ctx, class); err != nil {
		t.Fatal(err)
	}
}

func TestCreateLaunchesIntoThePlacementGroup(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	kafka := e.withGroup(t, awsemulator.PlacementGroup{Name: "kafka", Strategy: "partition", PartitionCount: 3}, func(c *awsv1.EC2NodeClass) {
		c.Spec.IPPrefixCount = ptrTo[int32](2)
	})
	for _, name := range []string{"default-a", "default-b"} {
		got, err := e.p.Create(ctx, nodeClaim(name, onDemand, []string{"c6i.large"}, twoZones))
		if err != nil {
			t.Fatal(err)
		}
		_, id, err := instance.ParseProviderID(got.Status.ProviderID)
		if err != nil {
			t.Fatal(err)
		}
		inst, ok := e.srv.Instance(id)
		if !ok {
			t.Fatalf("no instance for %s", got.Status.ProviderID)
		}
		if inst.Placement.GroupID != kafka.ID || inst.Placement.PartitionNumber == 0 || inst.IPv4PrefixCount != 2 {
			t.Errorf("%s: instance placement %+v, prefixes %d; want partition group %s and 2 prefixes", name, inst.Placement, inst.IPv4PrefixCount, kafka.ID)
		}
		if got.Labels[awsv1.LabelPlacementGroupID] != kafka.ID || got.Labels[awsv1.LabelPlacementGroupPartition] != strconv.Itoa(int(inst.Placement.PartitionNumber)) {
			t.Errorf("%s: labels %v, want the group %s and partition %d", name, got.Labels, kafka.ID, inst.Placement.PartitionNumber)
		}
	}
}

func TestCreateAsksForAGroupTheClassLacks(t *testing.T) {
	e := newEnv(t)
	nc := nodeClaim("default-a", onDemand, []string{"c6i.large"}, twoZones)
	nc.Spec.Requirements = append(nc.Spec.Requirements, karpv1.NodeSelectorRequirementWithMinValues{
		Key: awsv1.LabelPlacementGroupID, Operator: corev1.NodeSelectorOpIn, Values: []string{"pg-0123456789abcdef0"},
	})
	if _, err := e.p.Create(context.Background(), nc); !cloudprovider.IsInsufficientCapacityError(err) {
		t.Errorf("Create = %v, want insufficient capacity: the class launches outside any group", err)
	}
	if n := len(e.srv.Instances()); n != 0 {
		t.Errorf("%d instances launched", n)
	}
}

func TestIsDriftedByPlacementGroup(t *testing.T) {
	tests := []struct {
		name    string
		inGroup bool // launched into a group
		edit    func(t *testing.T, e *env)
		want    cloudprovider.DriftReason
	}{
		{name: "same group", inGroup: true},
		{name: "the selector now resolves to another group", inGroup: true, want: provider.DriftPlacementGroup, edit: func(t *testing.T, e *env) {
			e.withGroup(t, awsemulator.PlacementGroup{Name: "other", Strategy: "cluster"})
		}},
		{name: "the selector was removed", inGroup: true, want: provider.DriftPlacementGroup, edit: func(t *testing.T, e *env) {
			e.updateClass(t, func(c *awsv1.EC2NodeClass) { c.Spec.PlacementGroupSelector, c.Status.PlacementGroups = nil, nil })
		}},
		{name: "the selector resolves to nothing for now", inGroup: true, edit: func(t *testing.T, e *env) {
			e.updateClass(t, func(c *awsv1.EC2NodeClass) { c.Status.PlacementGroups = nil })
		}},
		{name: "a selector was added", want: provider.DriftPlacementGroup, edit: func(t *testing.T, e *env) {
			e.withGroup(t, awsemulator.PlacementGroup{Name: "new", Strategy: "spread"})
		}},
		{name: "never in a group"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			if tt.inGroup {
				e.withGroup(t, awsemulator.PlacementGroup{Name: "training", Strategy: "cluster"})
			}
			nc, err := e.p.Create(ctx, nodeClaim("default-a", onDemand, []string{"c6i.large"}, twoZones))
			if err != nil {
				t.Fatal(err)
			}
			if tt.edit != nil {
				tt.edit(t, e)
			}
			if got, err := e.p.IsDrifted(ctx, nc); err != nil || got != tt.want {
				t.Errorf("IsDrifted = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
