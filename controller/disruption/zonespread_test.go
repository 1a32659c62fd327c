package disruption

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/kwok/catalog"
	"github.com/joinery-dev/joinery/internal/testpods"
	"github.com/joinery-dev/joinery/scheduling"
	"github.com/joinery-dev/joinery/simulation"
)

var spreadZones = []string{"zone-a", "zone-b", "zone-c", "zone-d"}

// zonalCatalog has four sizes (2 to 16 vCPUs), each on demand in every zone of spreadZones at
// a price proportional to its size.
func zonalCatalog(t testing.TB) cloudprovider.InstanceTypes {
	t.Helper()
	f := &catalog.File{}
	for i, name := range []string{"small", "medium", "large", "xlarge"} {
		cpu := int64(2) << i
		it := catalog.InstanceType{Name: name, Arch: "amd64", OperatingSystems: []string{"linux"}, CPU: cpu, MemoryMiB: cpu * 2048, Pods: 110}
		for _, zone := range spreadZones {
			it.Offerings = append(it.Offerings, catalog.Offering{Zone: zone, CapacityType: karpv1.CapacityTypeOnDemand, Price: 0.05 * float64(cpu)})
		}
		f.InstanceTypes = append(f.InstanceTypes, it)
	}
	its, err := f.Build(catalog.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return its
}

// zonalSpotCatalog has, on spot in every zone of spreadZones, sixteen 2-vCPU types, sixteen
// 4-vCPU types and one of 16 vCPUs, xlarge, with 4 GiB per vCPU, each priced by its size (a
// little more for each later name). The fifteen cheapest types that hold a few pods are all
// 2-vCPU ones.
func zonalSpotCatalog(t testing.TB) cloudprovider.InstanceTypes {
	t.Helper()
	f := &catalog.File{}
	add := func(name string, cpu int64, price float64) {
		it := catalog.InstanceType{Name: name, Arch: "amd64", OperatingSystems: []string{"linux"}, CPU: cpu, MemoryMiB: cpu * 4096, Pods: 110}
		for _, zone := range spreadZones {
			it.Offerings = append(it.Offerings, catalog.Offering{Zone: zone, CapacityType: karpv1.CapacityTypeSpot, Price: price})
		}
		f.InstanceTypes = append(f.InstanceTypes, it)
	}
	for i := range 16 {
		add(fmt.Sprintf("two-%02d", i), 2, 0.10+0.001*float64(i))
		add(fmt.Sprintf("four-%02d", i), 4, 0.20+0.001*float64(i))
	}
	add("xlarge", 16, 0.80)
	its, err := f.Build(catalog.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return its
}

// TestScaleDownOfAZoneSpreadReplacesEveryNodeInOnePass (issue 24): a zone-spread Deployment
// (maxSkew 1, DoNotSchedule) was scaled down, and the ReplicaSet left its pods unevenly on the
// four zones' xlarge nodes (7, 14, 14 and 15). Every node is to be replaced by a smaller one,
// which only works if the pods of the fuller zones that must go to the emptier ones find room
// on those zones' replacements. One pass chooses all four commands, each simulated on the
// others done before it, and a replacement that the later commands' pods land on launches
// large enough for them (its planned requests raised). On spot, a single-node replacement
// launches as its fifteen cheapest types (SpotToSpotConsolidation): the emptiest zone's, chosen
// first for its 7 pods, would be fifteen 2-vCPU types, with no room for the pods the other
// zones send it, and each of those commands would need a second node. Its types are chosen
// again, the fifteen cheapest that hold what it is raised to (a live scale-down settled at
// $1.07/h instead of $0.17/h in one run of nine before).
func TestScaleDownOfAZoneSpreadReplacesEveryNodeInOnePass(t *testing.T) {
	spotOnly := func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, karpv1.NodeSelectorRequirementWithMinValues{
			Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeSpot}})
	}
	for _, tt := range []struct {
		capacityType string
		catalog      func(testing.TB) cloudprovider.InstanceTypes
		pool         npOption
	}{
		{karpv1.CapacityTypeOnDemand, zonalCatalog, onDemandOnly},
		{karpv1.CapacityTypeSpot, zonalSpotCatalog, spotOnly},
	} {
		t.Run(tt.capacityType, func(t *testing.T) {
			scaleDownOfAZoneSpreadReplacesEveryNodeInOnePass(t, tt.catalog(t), tt.capacityType, tt.pool)
		})
	}
}

func scaleDownOfAZoneSpreadReplacesEveryNodeInOnePass(t *testing.T, its cloudprovider.InstanceTypes, capacityType string, pool npOption) {
	objs := []client.Object{testNodePool("default", pool, budgets(karpv1.Budget{Nodes: "1"}))}
	counts := []int{7, 14, 14, 15}
	for z, zone := range spreadZones {
		name := fmt.Sprintf("n%d", z)
		objs = append(objs, pair(testNode(name, "default", typed(its, "xlarge", capacityType), func(nc *karpv1.NodeClaim, n *corev1.Node) {
			for _, labels := range []map[string]string{n.Labels, nc.Labels} {
				labels[corev1.LabelTopologyZone] = zone
			}
		}))...)
		for i := range counts[z] {
			objs = append(objs, testPod(fmt.Sprintf("inflate-%d-%d", z, i), "node-"+name, labelled("app", "inflate"),
				podOption(testpods.Spread(corev1.LabelTopologyZone, "inflate", corev1.DoNotSchedule)),
				func(p *corev1.Pod) {
					p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("250m")
				}))
		}
	}
	cluster, _ := loadCluster(t, objs...)
	pass, methods, got := consolidationDryRun(t, cluster, its, func(c *Consolidation) { c.SpotToSpot = true })
	for _, res := range pass.Methods {
		for _, b := range res.Blocked {
			t.Logf("%s: %s passed over: %s", res.Method, b.NodeClaim.Name, b.Message)
		}
	}
	if len(pass.Commands) != len(spreadZones) {
		t.Fatalf("the pass chose %d commands, want one replacement per node: %q", len(pass.Commands), got)
	}
	replaced := map[string]bool{}
	for _, cmd := range pass.Commands {
		for _, cand := range cmd.Candidates {
			replaced[cand.Name()] = true
		}
		if slices.ContainsFunc(cmd.Replacements, func(nc *karpv1.NodeClaim) bool {
			return nc.Labels[corev1.LabelInstanceTypeStable] == "xlarge"
		}) {
			t.Errorf("command %s replaces a node by its own type", cmd)
		}
	}
	if len(replaced) != len(spreadZones) {
		t.Errorf("replaced %d nodes, want all %d: %q", len(replaced), len(spreadZones), got)
	}
	// Each replacement launches holding every pod the pass sends it: its command's, and those
	// of later commands that the zone spread sends to its zone.
	cpu := map[string]int64{}
	for _, cmd := range pass.Commands {
		for uid, dest := range cmd.Destinations {
			if i, ok := replacementIndex(dest); ok {
				dest = passReplacementName(cmd, i)
			}
			for _, cand := range cmd.Candidates {
				for _, p := range cand.Pods {
					if p.UID == uid {
						cpu[dest] += p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue()
					}
				}
			}
		}
	}
	for _, cmd := range pass.Commands {
		for i, r := range cmd.Replacements {
			name := passReplacementName(cmd, i)
			launch, err := simulation.LaunchRequests(r)
			if err != nil {
				t.Fatal(err)
			}
			if got := launch.Cpu().MilliValue(); got < cpu[name] {
				t.Errorf("%s launches for %dm of CPU, but the pass sends it pods requesting %dm", name, got, cpu[name])
			}
			checkTypesHold(t, its, name, r)
		}
	}
	// Validation recomputes the first command on the cluster as it is (the others not started):
	// its replacement still launches for the pods the later commands send it.
	first := pass.Commands[0]
	i := slices.IndexFunc(methods, func(m Method) bool { return m.Name() == first.Method })
	byName := candidatesByName(cluster)
	fresh, err := methods[i].Revalidate(context.Background(), cluster, first, []*Candidate{byName[first.Candidates[0].Name()]})
	if err != nil {
		t.Fatalf("revalidating %s: %v", first, err)
	}
	want, _ := simulation.LaunchRequests(first.Replacements[0])
	if got, _ := simulation.LaunchRequests(fresh.Replacements[0]); got.Cpu().Cmp(*want.Cpu()) < 0 {
		t.Errorf("revalidated, %s launches for %s of CPU, want the %s the pass raised it to", first, got.Cpu(), want.Cpu())
	}
	checkTypesHold(t, its, "revalidated "+first.String(), fresh.Replacements[0])
}

// checkTypesHold fails t unless some instance type replacement may launch as holds what it
// launches for (the launch picks one that does), and, on spot, MinSpotToSpotInstanceTypes do.
func checkTypesHold(t *testing.T, its cloudprovider.InstanceTypes, name string, replacement *karpv1.NodeClaim) {
	t.Helper()
	launch, err := simulation.LaunchRequests(replacement)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, r := range replacement.Spec.Requirements {
		if r.Key == corev1.LabelInstanceTypeStable {
			types = r.Values
		}
	}
	var holding []string
	for _, it := range its {
		if slices.Contains(types, it.Name) && scheduling.Fits(launch, it.Allocatable()) == nil {
			holding = append(holding, it.Name)
		}
	}
	want := 1
	if replacement.Labels[karpv1.CapacityTypeLabelKey] == karpv1.CapacityTypeSpot {
		want = MinSpotToSpotInstanceTypes
	}
	if len(holding) < want {
		t.Errorf("%s may launch as %v, of which %v hold the %s CPU and %s memory it launches for; want %d that do",
			name, types, holding, launch.Cpu(), launch.Memory(), want)
	}
}
