package disruption

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/kwok/catalog"
	"github.com/joinery-dev/joinery/internal/testpods"
	"github.com/joinery-dev/joinery/simulation"
)

// testCatalog: small (2 cpu), medium (4 cpu), large (8 cpu) in test-zone-a, on-demand at
// 0.1 per cpu-pair and spot at 30 % of that; spotTypes more 2-cpu types ("tiny-N") with spot
// offerings only, cheaper than small's spot.
func testCatalog(t testing.TB, spotTypes int) cloudprovider.InstanceTypes {
	t.Helper()
	f := &catalog.File{}
	for i, name := range []string{"small", "medium", "large"} {
		cpu := int64(2) << i
		od := 0.1 * float64(cpu) / 2
		f.InstanceTypes = append(f.InstanceTypes, catalog.InstanceType{Name: name, Arch: "amd64", OperatingSystems: []string{"linux"},
			CPU: cpu, MemoryMiB: cpu * 2048, Pods: 58, Offerings: []catalog.Offering{
				{Zone: "test-zone-a", CapacityType: karpv1.CapacityTypeOnDemand, Price: od},
				{Zone: "test-zone-a", CapacityType: karpv1.CapacityTypeSpot, Price: od * 0.3},
			}})
	}
	for i := range spotTypes {
		f.InstanceTypes = append(f.InstanceTypes, catalog.InstanceType{Name: fmt.Sprintf("tiny-%02d", i), Arch: "amd64", OperatingSystems: []string{"linux"},
			CPU: 2, MemoryMiB: 4096, Pods: 58, Offerings: []catalog.Offering{
				{Zone: "test-zone-a", CapacityType: karpv1.CapacityTypeSpot, Price: 0.01 + 0.0001*float64(i)},
			}})
	}
	its, err := f.Build(catalog.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return its
}

// newSolverSimulator is the real solver over its; kube are the objects its Filters read
// through informers (claims, volumes, CSINodes).
func newSolverSimulator(t testing.TB, its cloudprovider.InstanceTypes, kube ...runtime.Object) *SolverSimulator {
	t.Helper()
	return newTestSimulation(t, benchTypes(its), kube...)
}

// newTestSimulation is NewSimulation, as the controller builds it, over src with the default
// profile and policies; kube are the objects its Filters read through informers.
func newTestSimulation(t testing.TB, src cloudprovider.InstanceTypeLister, kube ...runtime.Object) *SolverSimulator {
	t.Helper()
	profile, err := simulation.DefaultProfile()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	clientset := fake.NewClientset(kube...)
	factory := informers.NewSharedInformerFactory(clientset, 0)
	sim, err := NewSimulation(ctx, SimulationOptions{Profile: profile, InstanceTypes: src, Client: clientset, InformerFactory: factory})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return sim
}

// typed makes the node one of the catalog's types, with the type's allocatable.
func typed(its cloudprovider.InstanceTypes, name, capacityType string) ncOption {
	return func(nc *karpv1.NodeClaim, n *corev1.Node) {
		i := slices.IndexFunc(its, func(it *cloudprovider.InstanceType) bool { return it.Name == name })
		alloc := its[i].Allocatable()
		n.Status.Allocatable, nc.Status.Allocatable, nc.Status.Capacity = alloc, alloc, its[i].Capacity
		for _, labels := range []map[string]string{n.Labels, nc.Labels} {
			labels[corev1.LabelInstanceTypeStable] = name
			labels[karpv1.CapacityTypeLabelKey] = capacityType
			labels[corev1.LabelTopologyZone] = "test-zone-a"
			labels[corev1.LabelOSStable] = "linux"
			labels[corev1.LabelArchStable] = "amd64"
		}
	}
}

func allowSpot(np *karpv1.NodePool) {
	np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, karpv1.NodeSelectorRequirementWithMinValues{
		Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeSpot, karpv1.CapacityTypeOnDemand}})
}

func onDemandOnly(np *karpv1.NodePool) {
	np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, karpv1.NodeSelectorRequirementWithMinValues{
		Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}})
}

// typeMinValues asks for at least n instance types.
func typeMinValues(n int) npOption {
	return func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, karpv1.NodeSelectorRequirementWithMinValues{
			Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpExists, MinValues: ptr.To(n)})
	}
}

var allBudget = budgets(karpv1.Budget{Nodes: "100%"})

func cpuPod(name, node, cpu string) *corev1.Pod {
	p := testPod(name, node)
	p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(cpu)
	return p
}

func priceOf(its cloudprovider.InstanceTypes, name, capacityType string) float64 {
	for _, it := range its {
		if it.Name == name {
			for _, o := range it.Offerings {
				if o.CapacityType() == capacityType {
					return o.Price
				}
			}
		}
	}
	return -1
}

func TestConsolidation(t *testing.T) {
	type node struct {
		name, itype, capacityType string
		pods                      []string // cpu requests
	}
	tests := []struct {
		name       string
		multi      bool
		spotToSpot bool
		spotTypes  int
		pool       []npOption
		nodes      []node
		// want: candidates of the command ("" none), decision, and for a replace the
		// replacement's capacity types.
		want, decision, capacity string
		// types the replacement may not list, and how many it must list (0: any)
		notTypes  []string
		typeCount int
		blocked   string // message of the first Unconsolidatable, "" to not check
		held      string // a node annotated do-not-disrupt
		// exhausted are offerings the unavailable record names, capacity type and type.
		exhausted [][2]string
	}{
		{name: "single: delete when the pods fit on another node", pool: []npOption{onDemandOnly},
			nodes: []node{{"a", "large", "on-demand", []string{"500m"}}, {"b", "large", "on-demand", []string{"500m", "500m"}}},
			want:  "a", decision: "delete"},
		{name: "single: replace with a cheaper type, never the same one", pool: []npOption{onDemandOnly},
			nodes: []node{{"a", "large", "on-demand", []string{"500m"}}},
			want:  "a", decision: "replace", capacity: "on-demand", notTypes: []string{"large"}},
		{name: "single: nothing cheaper fits", pool: []npOption{onDemandOnly},
			nodes:   []node{{"a", "small", "on-demand", []string{"1"}}},
			blocked: msgNoCheaper},
		{name: "multi: two nodes replaced by one cheaper node", multi: true, pool: []npOption{onDemandOnly, allBudget},
			nodes: []node{{"a", "medium", "on-demand", []string{"500m"}}, {"b", "medium", "on-demand", []string{"500m"}}},
			want:  "a,b", decision: "replace", capacity: "on-demand", notTypes: []string{"large"}},
		{name: "multi: nodes of one type are never replaced by one of that type at its price: the rest are deleted", multi: true, pool: []npOption{onDemandOnly, allBudget},
			nodes: []node{{"a", "large", "on-demand", []string{"500m"}}, {"b", "large", "on-demand", []string{"500m"}}, {"c", "large", "on-demand", []string{"1", "1", "1", "1"}}},
			want:  "a,b", decision: "delete"},
		{name: "multi: largest prefix deleted", multi: true, pool: []npOption{onDemandOnly, allBudget},
			nodes: []node{{"a", "large", "on-demand", []string{"500m"}}, {"b", "large", "on-demand", []string{"500m"}}, {"c", "large", "on-demand", []string{"1", "1", "1", "1"}}},
			held:  "c", want: "a,b", decision: "delete"},
		{name: "multi: five nodes deleted in one command when the rest holds their pods", multi: true, pool: []npOption{onDemandOnly, allBudget},
			nodes: []node{{"a", "large", "on-demand", []string{"500m"}}, {"b", "large", "on-demand", []string{"500m"}}, {"c", "large", "on-demand", []string{"500m"}},
				{"d", "large", "on-demand", []string{"500m"}}, {"e", "large", "on-demand", []string{"500m"}}, {"f", "large", "on-demand", []string{"1", "1", "1", "1"}}},
			held: "f", want: "a,b,c,d,e", decision: "delete"},
		{name: "spot: deleting a spot node is allowed without the gate",
			nodes: []node{{"a", "large", "spot", []string{"500m"}}, {"b", "large", "spot", []string{"1", "1"}}},
			want:  "a", decision: "delete"},
		{name: "spot: no spot-to-spot replacement without the gate", pool: []npOption{allowSpot},
			nodes:   []node{{"a", "large", "spot", []string{"500m"}}},
			blocked: msgSpotToSpotOff},
		{name: "spot: single-node spot-to-spot needs 15 cheaper types", spotToSpot: true, spotTypes: 3, pool: []npOption{allowSpot},
			nodes:   []node{{"a", "large", "spot", []string{"500m"}}},
			blocked: "SpotToSpotConsolidation requires 15 cheaper instance type options than the current candidate to consolidate, got 5"},
		{name: "spot: single-node spot-to-spot launches the 15 cheapest", spotToSpot: true, spotTypes: 20, pool: []npOption{allowSpot},
			nodes: []node{{"a", "large", "spot", []string{"500m"}}},
			want:  "a", decision: "replace", capacity: "spot", notTypes: []string{"large", "small", "medium"}, typeCount: 15},
		{name: "spot: multi-node spot-to-spot does not need 15 types", multi: true, spotToSpot: true, pool: []npOption{allowSpot, allBudget},
			nodes: []node{{"a", "medium", "spot", []string{"500m"}}, {"b", "medium", "spot", []string{"500m"}}},
			want:  "a,b", decision: "replace", capacity: "spot", notTypes: []string{"large"}},
		{name: "on-demand to spot, pinned to spot, when cheaper only on spot (its own type included)", pool: []npOption{allowSpot},
			nodes: []node{{"a", "small", "on-demand", []string{"1"}}},
			want:  "a", decision: "replace", capacity: "spot", notTypes: []string{"large"}, typeCount: 2},
		{name: "on-demand whose only cheaper replacement is spot, spot exhausted: kept", pool: []npOption{allowSpot},
			nodes:     []node{{"a", "small", "on-demand", []string{"1"}}},
			exhausted: [][2]string{{"spot", "small"}, {"spot", "medium"}, {"spot", "large"}},
			blocked:   msgNoCheaper},
		{name: "on-demand or spot when cheaper on both", pool: []npOption{allowSpot},
			nodes: []node{{"a", "medium", "on-demand", []string{"1"}}},
			want:  "a", decision: "replace", capacity: "on-demand,spot", notTypes: []string{"medium", "large"}, typeCount: 1},
		{name: "spot: single-node spot-to-spot keeps what minValues needs beyond 15", spotToSpot: true, spotTypes: 20, pool: []npOption{allowSpot, typeMinValues(18)},
			nodes: []node{{"a", "large", "spot", []string{"500m"}}},
			want:  "a", decision: "replace", capacity: "spot", notTypes: []string{"large"}, typeCount: 18},
		{name: "budget allows nothing", pool: []npOption{onDemandOnly, budgets(karpv1.Budget{Nodes: "0"})},
			nodes:   []node{{"a", "large", "on-demand", []string{"500m"}}},
			blocked: "Cannot disrupt Node: no allowed disruptions for reason Underutilized in nodepool default (disruption budget)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			its := testCatalog(t, tt.spotTypes)
			objs := []client.Object{testNodePool("default", tt.pool...)}
			for _, n := range tt.nodes {
				opts := []ncOption{typed(its, n.itype, n.capacityType)}
				if n.name == tt.held {
					opts = append(opts, claimAnnotated)
				}
				objs = append(objs, pair(testNode(n.name, "default", opts...))...)
				for i, cpu := range n.pods {
					objs = append(objs, cpuPod(fmt.Sprintf("%s-%d", n.name, i), "node-"+n.name, cpu))
				}
			}
			cluster, _ := loadCluster(t, objs...)
			sim := newSolverSimulator(t, its)
			if len(tt.exhausted) > 0 {
				record := fixedRecord{}
				for _, e := range tt.exhausted {
					record[cloudprovider.OfferingKey{CapacityType: e[0], InstanceType: e[1], Zone: "test-zone-a"}] = epoch.Add(time.Hour)
				}
				sim.offerings = record
			}
			base := Consolidation{Simulator: sim, InstanceTypes: benchTypes(its), SpotToSpot: tt.spotToSpot}
			var m Method = &SingleNodeConsolidation{Consolidation: base}
			if tt.multi {
				m = &MultiNodeConsolidation{Consolidation: base}
			}
			cands, _ := cluster.Candidates(m.Reason(), m.Class())
			allowed, _ := cluster.Allowed(m.Reason(), epoch)
			cmd, blocked, err := m.ComputeCommand(context.Background(), cluster, allowed, cands)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if cmd != nil {
				got = strings.Join(cmd.CandidateNames(), ",")
			}
			if got != tt.want {
				t.Fatalf("command = %q, want %q (blocked %+v)", got, tt.want, blocked)
			}
			if tt.blocked != "" && (len(blocked) == 0 || blocked[0].Message != tt.blocked) {
				t.Errorf("blocked = %+v, want first %q", blocked, tt.blocked)
			}
			if cmd == nil {
				return
			}
			if string(cmd.Decision()) != tt.decision || cmd.Reason != karpv1.DisruptionReasonUnderutilized {
				t.Fatalf("decision %s reason %s, want %s Underutilized", cmd.Decision(), cmd.Reason, tt.decision)
			}
			verifyCommand(t, cluster, cmd, its)
			if cmd.Decision() == DecisionDelete {
				return
			}
			r := cmd.Replacements[0]
			types := replacementTypes(r)
			removed := 0.0
			for _, cand := range cmd.Candidates {
				removed += priceOf(its, cand.Node.Labels[corev1.LabelInstanceTypeStable], cand.Node.Labels[karpv1.CapacityTypeLabelKey])
			}
			for _, name := range types {
				if slices.Contains(tt.notTypes, name) {
					t.Errorf("replacement lists %s (types %v)", name, types)
				}
				// Every offering the replacement may launch with costs less.
				for _, ct := range []string{karpv1.CapacityTypeOnDemand, karpv1.CapacityTypeSpot} {
					if p := priceOf(its, name, ct); p >= removed && strings.Contains(tt.capacity, ct) {
						t.Errorf("replacement type %s may launch %s at %v, not less than the %v removed", name, ct, p, removed)
					}
				}
			}
			if tt.typeCount > 0 && len(types) != tt.typeCount {
				t.Errorf("replacement lists %d types, want %d", len(types), tt.typeCount)
			}
			var capacity []string
			for _, req := range r.Spec.Requirements {
				if req.Key == karpv1.CapacityTypeLabelKey {
					capacity = slices.Sorted(slices.Values(req.Values))
				}
			}
			if strings.Join(capacity, ",") != tt.capacity {
				t.Errorf("replacement capacity types %v, want %s", capacity, tt.capacity)
			}
		})
	}
}

func TestConsolidationShouldDisrupt(t *testing.T) {
	whenEmpty := testNodePool("default")
	whenEmpty.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmpty
	never := testNodePool("default")
	never.Spec.Disruption.ConsolidateAfter = karpv1.NeverDuration()
	tests := []struct {
		name string
		np   *karpv1.NodePool
		opts []ncOption
		want bool
	}{
		{name: "WhenEmptyOrUnderutilized, consolidatable", np: testNodePool("default"), want: true},
		{name: "Balanced, consolidatable", np: testNodePool("default", balanced), want: true},
		{name: "WhenEmpty leaves underutilized nodes alone", np: whenEmpty},
		{name: "consolidateAfter Never", np: never},
		{name: "consolidateAfter not passed yet", np: testNodePool("default"), opts: []ncOption{func(nc *karpv1.NodeClaim, _ *corev1.Node) {
			nc.Status.Conditions = nc.Status.Conditions[:1]
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc, node := testNode("a", "default", tt.opts...)
			cand := &Candidate{NodeClaim: nc, Node: node, NodePool: tt.np, Pods: []*corev1.Pod{testPod("web", node.Name)}}
			for _, m := range []Method{&MultiNodeConsolidation{}, &SingleNodeConsolidation{}} {
				if got := m.ShouldDisrupt(cand); got != tt.want {
					t.Errorf("%s: ShouldDisrupt = %v, want %v", m.Name(), got, tt.want)
				}
			}
		})
	}
}

func TestDisruptionCostOrder(t *testing.T) {
	withPods := func(name string, pods ...*corev1.Pod) *Candidate {
		nc, node := testNode(name, "default")
		nc.CreationTimestamp = metav1.NewTime(epoch)
		return &Candidate{NodeClaim: nc, Node: node, NodePool: testNodePool("default"), Pods: pods}
	}
	priority := func(p int32) *corev1.Pod { pod := testPod("p", ""); pod.Spec.Priority = ptr.To(p); return pod }
	deletionCost := func(v string) *corev1.Pod {
		pod := testPod("p", "")
		pod.Annotations = map[string]string{PodDeletionCostAnnotationKey: v}
		return pod
	}
	expiring := withPods("expiring", testPod("x", ""), testPod("y", ""))
	expiring.NodeClaim.Spec.ExpireAfter = karpv1.DurationOf(10 * time.Hour)
	tests := []struct {
		name  string
		cands []*Candidate
		want  string
	}{
		{name: "fewer pods first", cands: []*Candidate{withPods("two", testPod("x", ""), testPod("y", "")), withPods("one", testPod("x", ""))}, want: "one,two"},
		{name: "lower priority first", cands: []*Candidate{withPods("high", priority(1<<30)), withPods("low", priority(0))}, want: "low,high"},
		{name: "lower pod-deletion-cost first", cands: []*Candidate{withPods("costly", deletionCost("1000000000")), withPods("cheap", deletionCost("-5"))}, want: "cheap,costly"},
		{name: "expiring sooner first", cands: []*Candidate{withPods("lasting", testPod("x", "")), expiring}, want: "expiring,lasting"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// 9 of expiring's 10 hours have passed: its two pods cost 0.2.
			c := &Consolidation{}
			if got := strings.Join(names(c.order(tt.cands, epoch.Add(9*time.Hour))), ","); got != tt.want {
				t.Errorf("order = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestConsolidationTimeout: a clock that jumps 40 s per look runs out of the one-minute budget
// after the first probe of the binary search; that probe's command is used and the timeout is
// counted.
func TestConsolidationTimeout(t *testing.T) {
	its := testCatalog(t, 0)
	objs := []client.Object{testNodePool("default", onDemandOnly, allBudget)}
	for _, n := range []string{"a", "b", "c", "d"} {
		objs = append(objs, pair(testNode(n, "default", typed(its, "large", "on-demand")))...)
		objs = append(objs, cpuPod("web-"+n, "node-"+n, "500m"))
	}
	cluster, _ := loadCluster(t, objs...)
	now := epoch
	clock := func() time.Time { now = now.Add(40 * time.Second); return now }
	m := &MultiNodeConsolidation{Consolidation{Simulator: newSolverSimulator(t, its), InstanceTypes: benchTypes(its), Now: clock}}
	before := testutil.ToFloat64(consolidationTimeouts.WithLabelValues(ConsolidationTypeMulti))
	cands, _ := cluster.Candidates(m.Reason(), m.Class())
	allowed, _ := cluster.Allowed(m.Reason(), epoch)
	cmd, _, err := m.ComputeCommand(context.Background(), cluster, allowed, cands)
	if err != nil {
		t.Fatal(err)
	}
	if cmd == nil || len(cmd.Candidates) != 3 {
		t.Fatalf("command = %v, want the first probe's three candidates", cmd)
	}
	if got := testutil.ToFloat64(consolidationTimeouts.WithLabelValues(ConsolidationTypeMulti)) - before; got != 1 {
		t.Errorf("timeouts counted %v, want 1", got)
	}
}

// TestUnconsolidatableEvents: a node a PDB holds gets Unconsolidatable naming the PDB, a node
// with nothing cheaper gets "can't replace with a lower-priced node"; a WhenEmpty node gets
// none.
func TestUnconsolidatableEvents(t *testing.T) {
	its := testCatalog(t, 0)
	whenEmpty := testNodePool("lazy", onDemandOnly)
	whenEmpty.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmpty
	objs := []client.Object{testNodePool("default", onDemandOnly), whenEmpty}
	objs = append(objs, pair(testNode("held", "default", typed(its, "small", "on-demand")))...)
	objs = append(objs, pair(testNode("snug", "default", typed(its, "small", "on-demand")))...)
	objs = append(objs, pair(testNode("lazy", "lazy", typed(its, "small", "on-demand")))...)
	objs = append(objs, cpuPod("inflate", "node-held", "500m"), cpuPod("snug", "node-snug", "1500m"), cpuPod("idle", "node-lazy", "500m"),
		pdb("inflate-pdb", 0, map[string]string{"app": "inflate"}))
	c := newClient(t, objs...)
	cluster, err := LoadCluster(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	rec := events.NewFakeRecorder(100)
	base := Consolidation{Simulator: newSolverSimulator(t, its), InstanceTypes: benchTypes(its)}
	ctrl := New(c, c, rec, clocktesting.NewFakeClock(epoch), nil, Options{})
	m := &SingleNodeConsolidation{Consolidation: base}
	ctrl.methods = []Method{m}
	if err := ctrl.choose(context.Background(), cluster, epoch); err != nil {
		t.Fatal(err)
	}
	if len(ctrl.waiting) != 0 {
		t.Fatalf("command %s, want none", ctrl.waiting[0].cmd)
	}
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		if strings.Contains(e, EventUnconsolidatable) {
			got = append(got, e)
		}
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{"pdb default/inflate-pdb prevents pod evictions", msgNoCheaper} {
		if !strings.Contains(all, want) {
			t.Errorf("Unconsolidatable events %q lack %q", all, want)
		}
	}
	if strings.Contains(all, "lazy") || len(got) != 4 {
		t.Errorf("want 4 events (node and nodeclaim of held and snug), got %q", all)
	}
}

// fixedRecord is an unavailable-offerings record that never changes.
type fixedRecord map[cloudprovider.OfferingKey]time.Time

func (r fixedRecord) Unavailable(context.Context) (map[cloudprovider.OfferingKey]time.Time, error) {
	return r, nil
}

// TestSingleNodeConsolidationPrefersACommandThatDisturbsNoOtherCandidate (issue 24): node a
// comes first in disruption-cost order, but replacing it moves a pod onto node b (the pod must
// sit beside b's anchor), which is a candidate too: that pod would restart b's
// consolidateAfter, b's command would be refused at its validation, and the pod would move
// twice. Replacing b first disturbs no other node, so that is the command. The live
// scale-down did this with a zone spread: replacing the fullest zone's node first pushed its
// pods onto the other zones' nodes, each of which then waited its consolidateAfter again.
func TestSingleNodeConsolidationPrefersACommandThatDisturbsNoOtherCandidate(t *testing.T) {
	its := testCatalog(t, 0)
	cluster, _ := loadCluster(t, disturbingObjects(its)...)
	m := &SingleNodeConsolidation{Consolidation: Consolidation{Simulator: newSolverSimulator(t, its), InstanceTypes: benchTypes(its)}}
	cands, _ := cluster.Candidates(m.Reason(), m.Class())
	if order := names(m.order(cands, epoch)); !slices.Equal(order, []string{"a", "b"}) {
		t.Fatalf("disruption-cost order %v, want a first", order)
	}
	// a alone: its command moves a-follow onto b.
	aOnly, err := m.evaluate(context.Background(), cluster, newPriceBook(m.InstanceTypes, cluster), cands[:1], true)
	if err != nil {
		t.Fatalf("replacing a: %v", err)
	}
	if disturbs, _ := disturbance(cluster, aOnly, cands, epoch); !disturbs {
		t.Fatalf("a's command %s (moves %v) does not disturb b; the test no longer shows the case", aOnly, aOnly.Destinations)
	}
	allowed, _ := cluster.Allowed(m.Reason(), epoch)
	cmd, _, err := m.ComputeCommand(context.Background(), cluster, allowed, cands)
	if err != nil {
		t.Fatal(err)
	}
	if cmd == nil || !slices.Equal(cmd.CandidateNames(), []string{"b"}) {
		t.Fatalf("command %v, want b replaced, disturbing no other candidate", cmd)
	}
	if disturbs, _ := disturbance(cluster, cmd, cands, epoch); disturbs {
		t.Fatalf("command %v, want b replaced, disturbing no other candidate", cmd)
	}
}

// disturbingObjects: nodes a and b, large, on demand. Replacing a moves its pod a-follow onto
// b (it must sit beside b's anchor), while a-solo needs a new node; b's anchor needs a new
// node too, and a costly deletion puts b after a in disruption-cost order. change adjusts each
// NodeClaim.
func disturbingObjects(its cloudprovider.InstanceTypes, change ...ncOption) []client.Object {
	solo := podOption(testpods.AntiAffine(corev1.LabelHostname, "solo"))
	follow := func(p *corev1.Pod) {
		testpods.Affinity(p).PodAffinity = &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "anchor"}}}}}
	}
	costly := func(p *corev1.Pod) { p.Annotations = map[string]string{PodDeletionCostAnnotationKey: "1000000000"} }
	objs := []client.Object{testNodePool("default", onDemandOnly)}
	objs = append(objs, pair(testNode("a", "default", append([]ncOption{typed(its, "large", "on-demand")}, change...)...))...)
	objs = append(objs, pair(testNode("b", "default", append([]ncOption{typed(its, "large", "on-demand")}, change...)...))...)
	objs = append(objs,
		cpuPod("a-solo", "node-a", "100m"), cpuPod("a-follow", "node-a", "100m"),
		cpuPod("anchor", "node-b", "100m"))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			switch p.Name {
			case "a-solo":
				labelled("app", "solo")(p)
				solo(p)
			case "a-follow":
				follow(p)
			case "anchor":
				labelled("app", "solo")(p)
				labelled("tier", "anchor")(p)
				solo(p)
				costly(p)
			}
		}
	}
	return objs
}

// TestSingleNodeConsolidationWaitsForANodeItWouldDisturb (issue 24): replacing a moves a pod
// onto b, whose consolidateAfter ends in a few seconds. The pass waits for it, once: seeing
// both, it replaces b first and moves each pod once. It does not wait for a node further
// off, nor when a has waited the validation delay already.
func TestSingleNodeConsolidationWaitsForANodeItWouldDisturb(t *testing.T) {
	now := epoch.Add(time.Hour)
	tests := []struct {
		name                    string
		aConsolidatableFor, bIn time.Duration
		want                    string
	}{
		{name: "b consolidatable in 5s: wait", aConsolidatableFor: time.Second, bIn: 5 * time.Second, want: ""},
		{name: "b consolidatable in 20s: replace a", aConsolidatableFor: time.Second, bIn: 20 * time.Second, want: "a"},
		{name: "a waited already: replace a", aConsolidatableFor: imminentWindow, bIn: 5 * time.Second, want: "a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			its := testCatalog(t, 0)
			objs := disturbingObjects(its, func(nc *karpv1.NodeClaim, _ *corev1.Node) {
				switch nc.Name {
				case "a":
					meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeConsolidatable).LastTransitionTime = metav1.NewTime(now.Add(-tc.aConsolidatableFor))
				case "b":
					meta.RemoveStatusCondition(&nc.Status.Conditions, karpv1.ConditionTypeConsolidatable)
					nc.Status.LastPodEventTime = metav1.NewTime(now.Add(tc.bIn - 30*time.Second))
				}
			})
			for _, o := range objs {
				if np, ok := o.(*karpv1.NodePool); ok {
					np.Spec.Disruption.ConsolidateAfter = karpv1.DurationOf(30 * time.Second)
				}
			}
			cluster, _ := loadCluster(t, objs...)
			m := &SingleNodeConsolidation{Consolidation: Consolidation{Simulator: newSolverSimulator(t, its), InstanceTypes: benchTypes(its), Now: func() time.Time { return now }}}
			cmd, _ := decideAt(context.Background(), t, cluster, m, now)
			got := ""
			if cmd != nil {
				got = strings.Join(cmd.CandidateNames(), ",")
			}
			if got != tc.want {
				t.Errorf("command for %q, want %q", got, tc.want)
			}
		})
	}
}

// TestConsolidationWaitsForNodesAboutToBecomeConsolidatable (issue 24): after a scale-down
// every node's consolidateAfter ends within seconds of the others'. While the candidates
// became Consolidatable only just now and another node's consolidateAfter ends within the
// validation delay, neither method chooses: the pass that sees them all chooses them together.
// A node whose consolidateAfter ended a moment ago but that the podevents controller has not
// marked yet counts as about to. A node further off, one held for another reason, or
// candidates that have waited the validation delay already, do not hold the pass.
func TestConsolidationWaitsForNodesAboutToBecomeConsolidatable(t *testing.T) {
	now := epoch.Add(time.Hour)
	tests := []struct {
		name                   string
		consolidatableFor, cIn time.Duration
		wait                   bool
	}{
		{name: "c consolidatable in 5s: wait", consolidatableFor: time.Second, cIn: 5 * time.Second, wait: true},
		{name: "c consolidatable in 20s: choose", consolidatableFor: time.Second, cIn: 20 * time.Second},
		{name: "c due a moment ago, not marked yet: wait", consolidatableFor: time.Second, cIn: -time.Second, wait: true},
		{name: "c due long ago, not marked: choose", consolidatableFor: time.Second, cIn: -20 * time.Second},
		{name: "candidates waited already: choose", consolidatableFor: imminentWindow, cIn: 5 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			its := testCatalog(t, 0)
			np := testNodePool("default", onDemandOnly, budgets(karpv1.Budget{Nodes: "100%"}))
			np.Spec.Disruption.ConsolidateAfter = karpv1.DurationOf(30 * time.Second)
			objs := []client.Object{np}
			for _, name := range []string{"a", "b", "c"} {
				objs = append(objs, pair(testNode(name, "default", typed(its, "large", "on-demand"), func(nc *karpv1.NodeClaim, _ *corev1.Node) {
					if name == "c" {
						meta.RemoveStatusCondition(&nc.Status.Conditions, karpv1.ConditionTypeConsolidatable)
						nc.Status.LastPodEventTime = metav1.NewTime(now.Add(tc.cIn - 30*time.Second))
						return
					}
					meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeConsolidatable).LastTransitionTime = metav1.NewTime(now.Add(-tc.consolidatableFor))
				}))...)
				objs = append(objs, cpuPod(name+"-pod", "node-"+name, "100m"))
			}
			cluster, _ := loadCluster(t, objs...)
			base := Consolidation{Simulator: newSolverSimulator(t, its), InstanceTypes: benchTypes(its), Now: func() time.Time { return now }}
			for _, m := range []Method{&MultiNodeConsolidation{Consolidation: base}, &SingleNodeConsolidation{Consolidation: base}} {
				cmd, mine := decideAt(context.Background(), t, cluster, m, now)
				if len(mine) != 2 {
					t.Fatalf("%s: %d candidates, want a and b", m.Name(), len(mine))
				}
				if waited := cmd == nil; waited != tc.wait {
					t.Errorf("%s: command %v, want a wait: %v", m.Name(), cmd, tc.wait)
				}
			}
		})
	}
}
