package solver

import (
	"maps"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/internal/testpods"
	"github.com/joinery-dev/joinery/scheduling"
	"github.com/joinery-dev/joinery/simulation"
)

const zone = corev1.LabelTopologyZone

func threeZones() poolOption {
	return requiring(zone, corev1.NodeSelectorOpIn, nil, "test-zone-a", "test-zone-b", "test-zone-c")
}

func TestPlan(t *testing.T) {
	inFlight := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "default-abcde", Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}},
		Spec: karpv1.NodeClaimSpec{Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
			{Key: karpv1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"default"}},
			{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.2xlarge"}},
			{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
		}},
	}
	cases := []struct {
		name  string
		state *StaticState
		// objects are in the cluster besides state: volumes, claims, storage classes.
		objects []runtime.Object
		batch   []*corev1.Pod
		opts    []solverOption
		check   func(t *testing.T, plan *simulation.Plan)
	}{{
		name:  "plain pods pack onto cheap instance types, at most 60",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default")}},
		batch: pods(10, "web", "1", "1Gi"),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 1)
			nc := plan.NewNodeClaims[0].NodeClaim
			names := instanceTypes(nc)
			if len(names) == 0 || len(names) > DefaultMaxInstanceTypes {
				t.Fatalf("instance types %d, want 1..60", len(names))
			}
			assertCheapestFirst(t, nc, names)
			if nc.GenerateName != "default-" || nc.Labels[karpv1.NodePoolLabelKey] != "default" || nc.Annotations[karpv1.NodePoolHashAnnotationKey] != "hash-default" {
				t.Errorf("metadata %+v", nc.ObjectMeta)
			}
			if ref := nc.OwnerReferences; len(ref) != 1 || ref[0].Kind != "NodePool" || !*ref[0].Controller || !*ref[0].BlockOwnerDeletion {
				t.Errorf("owner references %+v", ref)
			}
			cpu := nc.Spec.Resources.Requests[corev1.ResourceCPU]
			if cpu.Cmp(resource.MustParse("10")) != 0 {
				t.Errorf("requested cpu %s, want 10", cpu.String())
			}
			if len(simulation.PlannedPods(nc)) != 10 {
				t.Errorf("planned pods %v", simulation.PlannedPods(nc))
			}
		},
	}, {
		name:  "NodePools in weight order",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("light", weighted(10)), nodePool("heavy", weighted(50)), nodePool("none")}},
		batch: pods(2, "web", "1", "1Gi"),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 1)
			wantPool(t, plan.NewNodeClaims[0].NodeClaim, "heavy")
		},
	}, {
		name:  "a NodePool that is not Ready is skipped",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("broken", weighted(90), notReady), nodePool("default")}},
		batch: pods(1, "web", "1", "1Gi"),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 1)
			wantPool(t, plan.NewNodeClaims[0].NodeClaim, "default")
		},
	}, {
		name:  "an untolerated taint moves to the next NodePool",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("gpu", weighted(90), tainted("gpu")), nodePool("default")}},
		batch: append(pods(1, "web", "1", "1Gi"), pods(1, "train", "1", "1Gi", testpods.Tolerating("gpu"))...),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 2)
			pools := []string{plan.NewNodeClaims[0].NodeClaim.Labels[karpv1.NodePoolLabelKey], plan.NewNodeClaims[1].NodeClaim.Labels[karpv1.NodePoolLabelKey]}
			slices.Sort(pools)
			if !slices.Equal(pools, []string{"default", "gpu"}) {
				t.Errorf("pools %v", pools)
			}
			for _, c := range plan.NewNodeClaims {
				if c.NodeClaim.Labels[karpv1.NodePoolLabelKey] == "gpu" && c.Pods[0].Name != "train-0" {
					t.Errorf("gpu pool got %s", c.Pods[0].Name)
				}
			}
		},
	}, {
		name:  "an untolerated taint on the only NodePool is unschedulable",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("gpu", tainted("gpu"))}},
		batch: pods(1, "web", "1", "1Gi"),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 0)
			wantUnschedulable(t, plan, "uid-web-0", "taint gpu:NoSchedule not tolerated")
		},
	}, {
		name:  "a PreferNoSchedule taint is avoided while another NodePool fits",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("spare", weighted(90), softTainted("spare")), nodePool("default")}},
		batch: append(pods(1, "web", "1", "1Gi"), pods(1, "batch", "30", "1Gi", testpods.Tolerating("spare"))...),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 2)
			for _, c := range plan.NewNodeClaims {
				want := map[string]string{"web-0": "default", "batch-0": "spare"}[c.Pods[0].Name]
				if got := c.NodeClaim.Labels[karpv1.NodePoolLabelKey]; got != want {
					t.Errorf("%s planned from nodepool %s, want %s", c.Pods[0].Name, got, want)
				}
			}
		},
	}, {
		name:  "a PreferNoSchedule taint is relaxed when no other NodePool fits",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("spare", softTainted("spare"))}},
		batch: pods(1, "web", "1", "1Gi"),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 1)
			wantPool(t, plan.NewNodeClaims[0].NodeClaim, "spare")
		},
	}, {
		name: "avoiding a PreferNoSchedule taint outranks the pod's preferences, which come back once it is relaxed",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{
			nodePool("spare", weighted(90), softTainted("spare"), threeZones()),
			nodePool("default", requiring(zone, corev1.NodeSelectorOpIn, nil, "test-zone-c")),
		}},
		// web prefers zone b, which only the tainted NodePool has: like Karpenter, the taint is
		// respected and the preference dropped (zone c). big requires zone a or b, which default
		// lacks: the taint
		// is relaxed and its preference for zone b kept.
		batch: append(pods(1, "web", "1", "1Gi", testpods.PreferNode(50, zone, "test-zone-b")),
			pods(1, "big", "1", "1Gi", requireNode(zone, "test-zone-a", "test-zone-b"), testpods.PreferNode(50, zone, "test-zone-b"))...),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 2)
			for _, c := range plan.NewNodeClaims {
				pool, zones := c.NodeClaim.Labels[karpv1.NodePoolLabelKey], requirement(c.NodeClaim, zone).Values()
				switch c.Pods[0].Name {
				case "web-0":
					if pool != "default" || !slices.Equal(zones, []string{"test-zone-c"}) {
						t.Errorf("web-0 planned from %s in %v, want default in test-zone-c", pool, zones)
					}
				case "big-0":
					if pool != "spare" || !slices.Equal(zones, []string{"test-zone-b"}) {
						t.Errorf("big-0 planned from %s in %v, want spare in test-zone-b", pool, zones)
					}
				}
			}
		},
	}, {
		name:  "under the Ignore policy a PreferNoSchedule taint is not avoided",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("spare", weighted(90), softTainted("spare")), nodePool("default")}},
		batch: pods(1, "web", "1", "1Gi"),
		opts:  []solverOption{withPolicy(PreferenceIgnore)},
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 1)
			wantPool(t, plan.NewNodeClaims[0].NodeClaim, "spare")
		},
	}, {
		name:  "limits count in-flight NodeClaims",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default", limited(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")}))}, NodeClaimList: []*karpv1.NodeClaim{inFlight}},
		// m5.2xlarge (8 cpu) in flight leaves 2 cpu of the limit: the 6-cpu pod (largest
		// first) joins the NodeClaim in flight, the 4-cpu pod fits neither it nor the limit.
		batch: append(pods(1, "big", "4", "1Gi"), pods(1, "huge", "6", "1Gi")...),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 0)
			if plan.InFlight["uid-huge-0"] != "default-abcde" {
				t.Errorf("in flight %v", plan.InFlight)
			}
			wantUnschedulable(t, plan, "uid-big-0", "limits reached")
		},
	}, {
		name:  "limits reached: unschedulable",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default", limited(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}))}},
		batch: pods(1, "web", "2", "1Gi"),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 0)
			wantUnschedulable(t, plan, "uid-web-0", "limits reached")
		},
	}, {
		name:  "nodeSelector incompatible with the NodePool",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default", threeZones())}},
		batch: append(pods(1, "d", "1", "1Gi", testpods.Selecting(zone, "test-zone-d")), pods(1, "b", "1", "1Gi", requireNode(zone, "test-zone-b"))...),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 1)
			wantUnschedulable(t, plan, "uid-d-0", "incompatible requirements")
			if got := plan.NewNodeClaims[0].NodeClaim.Labels[zone]; got != "test-zone-b" {
				t.Errorf("zone label %q, want test-zone-b", got)
			}
		},
	}, {
		name:  "a custom label declared with Exists gets a value",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default", requiring("example.com/team", corev1.NodeSelectorOpExists, nil))}},
		batch: append(pods(1, "any", "1", "1Gi"), pods(1, "red", "1", "1Gi", testpods.Selecting("example.com/team", "red"))...),
		check: func(t *testing.T, plan *simulation.Plan) {
			for _, c := range plan.NewNodeClaims {
				if c.NodeClaim.Labels["example.com/team"] == "" {
					t.Errorf("nodeclaim without a team label: %v", c.NodeClaim.Labels)
				}
			}
			if len(plan.Unschedulable) != 0 {
				t.Errorf("unschedulable %v", plan.Unschedulable)
			}
		},
	}, {
		name:  "an undeclared custom label is unschedulable",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default")}},
		batch: pods(1, "red", "1", "1Gi", testpods.Selecting("example.com/team", "red")),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantUnschedulable(t, plan, "uid-red-0", "example.com/team")
		},
	}, {
		name:  "zone spread across three zones",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default", threeZones())}},
		batch: pods(3, "spread", "1", "1Gi", labelled("app", "spread"), testpods.Spread(zone, "spread", corev1.DoNotSchedule)),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 3)
			zones := map[string]bool{}
			for _, c := range plan.NewNodeClaims {
				zones[c.NodeClaim.Labels[zone]] = true
			}
			if len(zones) != 3 || zones[""] {
				t.Errorf("zones %v, want three distinct", zones)
			}
		},
	}, {
		name:  "hostname anti-affinity: one pod per node",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default")}},
		batch: pods(4, "db", "500m", "512Mi", labelled("app", "db"), testpods.AntiAffine(corev1.LabelHostname, "db")),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 4)
		},
	}, {
		name:  "required zone pod affinity keeps pods in one zone",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default")}},
		batch: pods(6, "cache", "4", "8Gi", labelled("app", "cache"), affine(zone, "cache"), testpods.AntiAffine(corev1.LabelHostname, "cache")),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 6)
			zones := map[string]bool{}
			for _, c := range plan.NewNodeClaims {
				zones[c.NodeClaim.Labels[zone]] = true
			}
			if len(zones) != 1 || zones[""] {
				t.Errorf("zones %v, want one", zones)
			}
		},
	}, {
		name: "daemonset overhead counts and a hostPort conflict with it is unschedulable",
		state: &StaticState{
			NodePoolList:  []*karpv1.NodePool{nodePool("default")},
			DaemonSetList: []*appsv1.DaemonSet{daemonSet("agent", "1", "1Gi", testpods.HostPort(9100))},
		},
		batch: append(pods(1, "web", "1", "1Gi"), pods(1, "exporter", "100m", "64Mi", testpods.HostPort(9100))...),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 1)
			cpu := plan.NewNodeClaims[0].NodeClaim.Spec.Resources.Requests[corev1.ResourceCPU]
			if cpu.Cmp(resource.MustParse("2")) != 0 {
				t.Errorf("requested cpu %s, want 2 (pod + daemon)", cpu.String())
			}
			wantUnschedulable(t, plan, "uid-exporter-0", "NodePorts")
		},
	}, {
		name:  "preferred anti-affinity respected",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default")}},
		batch: pods(3, "web", "500m", "512Mi", labelled("app", "web"), testpods.PreferAntiAffine(10, corev1.LabelHostname, "web")),
		check: func(t *testing.T, plan *simulation.Plan) { wantClaims(t, plan, 3) },
	}, {
		name:  "preferred anti-affinity ignored",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default")}},
		batch: pods(3, "web", "500m", "512Mi", labelled("app", "web"), testpods.PreferAntiAffine(10, corev1.LabelHostname, "web")),
		opts:  []solverOption{withPolicy(PreferenceIgnore)},
		check: func(t *testing.T, plan *simulation.Plan) { wantClaims(t, plan, 1) },
	}, {
		name:  "unsatisfiable preference is relaxed, lowest weight first",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default", threeZones())}},
		batch: pods(1, "web", "500m", "512Mi", testpods.PreferNode(50, zone, "test-zone-b"), testpods.PreferNode(10, zone, "test-zone-d")),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 1)
			if got := plan.NewNodeClaims[0].NodeClaim.Labels[zone]; got != "test-zone-b" {
				t.Errorf("zone %q, want test-zone-b (the lighter, unsatisfiable preference relaxed first)", got)
			}
		},
	}, {
		// Karpenter's scheduling benchmark pods: preferred zone node affinity, preferred zone
		// anti-affinity (weight 10, unsatisfiable past three pods) and preferred hostname
		// anti-affinity (weight 1). Once the zone anti-affinity cannot be met, Respect keeps
		// the lighter hostname anti-affinity and the node affinity: one node per pod, as
		// Karpenter plans them, and the pods past the third in the preferred zone.
		name:  "respect keeps the lighter preferences a dropped heavier one leaves satisfiable",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default", threeZones())}},
		batch: pods(8, "bench", "100m", "128Mi", labelled("app", "bench"),
			testpods.PreferNode(5, zone, "test-zone-a"),
			testpods.PreferAntiAffine(10, zone, "bench"),
			testpods.PreferAntiAffine(1, corev1.LabelHostname, "bench")),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 8)
			zones := map[string]int{}
			for _, c := range plan.NewNodeClaims {
				zones[c.NodeClaim.Labels[zone]]++
			}
			if want := map[string]int{"test-zone-a": 6, "test-zone-b": 1, "test-zone-c": 1}; !maps.Equal(zones, want) {
				t.Errorf("nodeclaims per zone %v, want %v", zones, want)
			}
		},
	}, {
		name:  "respect keeps a lighter preference after dropping a heavier one",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default", threeZones())}},
		batch: pods(1, "web", "500m", "512Mi", testpods.PreferNode(50, zone, "test-zone-d"), testpods.PreferNode(10, zone, "test-zone-c")),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 1)
			if got := plan.NewNodeClaims[0].NodeClaim.Labels[zone]; got != "test-zone-c" {
				t.Errorf("zone %q, want test-zone-c (the heavier, unsatisfiable preference dropped, the lighter kept)", got)
			}
		},
	}, {
		name:  "in-flight NodeClaim reused",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default")}, NodeClaimList: []*karpv1.NodeClaim{inFlight}},
		batch: pods(3, "web", "1", "1Gi"),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 0)
			if len(plan.InFlight) != 3 {
				t.Errorf("in flight %v", plan.InFlight)
			}
		},
	}, {
		// The lifecycle controller has not yet written status.nodeName: the Node named after
		// the claim is its capacity; the claim must not be added again as a hypothetical node
		// (planning failed on the name clash before), and the batch fills that Node, which is
		// still initializing, instead of buying a NodeClaim beside it (issue 24: a later batch
		// planned in this window bought small NodeClaims while launching ones had room).
		name: "in-flight NodeClaim whose Node registered before its status says so",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default")}, NodeClaimList: []*karpv1.NodeClaim{inFlight},
			NodeList: []*corev1.Node{{
				ObjectMeta: metav1.ObjectMeta{Name: inFlight.Name, Labels: map[string]string{
					karpv1.NodePoolLabelKey: "default", corev1.LabelHostname: inFlight.Name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
					corev1.LabelInstanceTypeStable: "m5.2xlarge", zone: "test-zone-a",
				}},
				Status: corev1.NodeStatus{
					Allocatable: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("58"),
					},
					Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
				},
			}}},
		batch: pods(3, "web", "1", "1Gi"),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 0)
			if len(plan.InFlight) != 3 || plan.InFlight["uid-web-0"] != inFlight.Name {
				t.Errorf("in flight %v, want the three pods on %s, the claim whose Node registered", plan.InFlight, inFlight.Name)
			}
		},
	}, {
		// Issue 17, defect 3: the NodeClaim's Node registered (still initializing), and the
		// six pods planned onto it have not bound yet. Its capacity is promised to them: of
		// the two new pods only one fits beside them, the other needs a NodeClaim of its own.
		name: "planned but unbound pods of a registered NodeClaim hold its capacity",
		state: func() *StaticState {
			registered := inFlight.DeepCopy()
			registered.Status.NodeName = "node-registered"
			planned := pods(6, "planned", "1", "1Gi")
			simulation.AddPlannedPods(registered, uidsOf(planned)...)
			return &StaticState{
				NodePoolList:  []*karpv1.NodePool{nodePool("default")},
				NodeClaimList: []*karpv1.NodeClaim{registered},
				PodList:       planned,
				NodeList: []*corev1.Node{{
					ObjectMeta: metav1.ObjectMeta{Name: "node-registered", Labels: map[string]string{
						karpv1.NodePoolLabelKey: "default", corev1.LabelHostname: "node-registered", corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
						corev1.LabelInstanceTypeStable: "m5.2xlarge", zone: "test-zone-a",
					}},
					Status: corev1.NodeStatus{
						Allocatable: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("58"),
						},
						Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
					},
				}},
			}
		}(),
		batch: pods(2, "web", "1500m", "1Gi"),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 1)
			if got := podNames(plan.NewNodeClaims[0].Pods); len(got) != 1 {
				t.Errorf("the new NodeClaim holds %v, want one pod", got)
			}
			if len(plan.InFlight) != 1 {
				t.Errorf("in flight %v, want one pod beside the six planned", plan.InFlight)
			}
		},
	}, {
		// Issue 24: kube-scheduler tried the pods while the NodeClaim's Node was initializing;
		// by the time the batch is planned the NodeClaim initialized. The pods go back to
		// kube-scheduler for that Node (Plan.Retry), the one that does not fit beside them gets
		// capacity of its own, and nothing is bought for the rest.
		name: "pending pods that fit an initialized node now are retried there, not given capacity",
		state: func() *StaticState {
			initialized := inFlight.DeepCopy()
			initialized.Status.NodeName = "node-ready"
			initialized.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue}}
			return &StaticState{
				NodePoolList:  []*karpv1.NodePool{nodePool("default")},
				NodeClaimList: []*karpv1.NodeClaim{initialized},
				NodeList: []*corev1.Node{{
					ObjectMeta: metav1.ObjectMeta{Name: "node-ready", Labels: map[string]string{
						karpv1.NodePoolLabelKey: "default", corev1.LabelHostname: "node-ready", corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
						corev1.LabelInstanceTypeStable: "m5.2xlarge", zone: "test-zone-a",
					}},
					Status: corev1.NodeStatus{
						Allocatable: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("58"),
						},
						Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
					},
				}},
			}
		}(),
		batch: pods(3, "web", "3", "1Gi"),
		check: func(t *testing.T, plan *simulation.Plan) {
			if len(plan.Retry) != 2 || plan.Retry["uid-web-0"] != "node-ready" {
				t.Errorf("retry %v, want two pods on node-ready", plan.Retry)
			}
			if len(plan.InFlight) != 0 {
				t.Errorf("in flight %v, want none", plan.InFlight)
			}
			wantClaims(t, plan, 1)
			if got := podNames(plan.NewNodeClaims[0].Pods); len(got) != 1 {
				t.Errorf("the new NodeClaim holds %v, want the one pod that does not fit", got)
			}
		},
	}, {
		name:  "minValues strict: unschedulable when too few families remain",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default", requiring("karpenter.k8s.aws/instance-family", corev1.NodeSelectorOpIn, new(3), "m5", "c5"))}},
		batch: pods(1, "web", "1", "1Gi"),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 0)
			wantUnschedulable(t, plan, "uid-web-0", "minValues")
		},
	}, {
		name:  "minValues best effort: relaxed and annotated",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default", requiring("karpenter.k8s.aws/instance-family", corev1.NodeSelectorOpIn, new(3), "m5", "c5"))}},
		batch: pods(1, "web", "1", "1Gi"),
		opts:  []solverOption{withMinValues(MinValuesBestEffort)},
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 1)
			nc := plan.NewNodeClaims[0].NodeClaim
			if nc.Annotations[karpv1.NodeClaimMinValuesRelaxedAnnotationKey] != "true" {
				t.Errorf("annotations %v", nc.Annotations)
			}
			if mv := requirement(nc, "karpenter.k8s.aws/instance-family").MinValues; mv == nil || *mv != 2 {
				t.Errorf("minValues %v, want 2", mv)
			}
		},
	}, {
		name:  "minValues met: instance types cover enough families",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default", requiring("karpenter.k8s.aws/instance-family", corev1.NodeSelectorOpExists, new(5)))}},
		batch: pods(1, "web", "1", "1Gi"),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 1)
			fams := map[string]bool{}
			for _, it := range kwokTypes(t) {
				if slices.Contains(instanceTypes(plan.NewNodeClaims[0].NodeClaim), it.Name) {
					fams[it.Requirements.Get("karpenter.k8s.aws/instance-family").Any()] = true
				}
			}
			if len(fams) < 5 {
				t.Errorf("families %v, want at least 5", fams)
			}
		},
	}, {
		name:  "custom-key spread counts every value the NodePool lists as a domain",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default", requiring(rack, corev1.NodeSelectorOpIn, nil, "rack-1", "rack-2"))}},
		batch: pods(2, "web", "1", "1Gi", labelled("app", "web"), testpods.Spread(rack, "web", corev1.DoNotSchedule)),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 2)
			if got := labelValues(plan, rack); !slices.Equal(got, []string{"rack-1", "rack-2"}) {
				t.Errorf("racks %v, want rack-1 and rack-2", got)
			}
		},
	}, {
		name:    "a bound volume's node affinity picks the zone",
		state:   &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default", threeZones())}},
		objects: boundVolume("pv-data", "data", zone, "test-zone-b"),
		batch:   pods(1, "db", "1", "1Gi", mountingClaim("data")),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 1)
			wantLabelValues(t, plan, zone, "test-zone-b")
		},
	}, {
		name:    "a WaitForFirstConsumer StorageClass's allowed topologies pick the zone",
		state:   &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default", threeZones())}},
		objects: delayedVolume("data", "test-zone-c"),
		batch:   pods(1, "db", "1", "1Gi", mountingClaim("data")),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 1)
			wantLabelValues(t, plan, zone, "test-zone-c")
		},
	}, {
		// A local-volume class: nothing provisions, so the claim binds to a volume created
		// for it, and the volume's node affinity decides the zone.
		name:    "a WaitForFirstConsumer claim without a provisioner goes where an available volume is",
		state:   &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default", threeZones())}},
		objects: availableVolume("pv-local", "local", "data", "test-zone-c"),
		batch:   pods(1, "db", "1", "1Gi", mountingClaim("data")),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 1)
			wantLabelValues(t, plan, zone, "test-zone-c")
		},
	}, {
		name:    "the EBS CSI zone key of a bound volume stands for the zone",
		state:   &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default", threeZones())}},
		objects: boundVolume("pv-data", "data", "topology.ebs.csi.aws.com/zone", "test-zone-a"),
		batch:   pods(1, "db", "1", "1Gi", mountingClaim("data")),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 1)
			wantLabelValues(t, plan, zone, "test-zone-a")
		},
	}, {
		name:  "a nodeSelector on the deprecated beta zone key is met",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default", threeZones())}},
		batch: pods(1, "web", "1", "1Gi", testpods.Selecting(corev1.LabelFailureDomainBetaZone, "test-zone-b")),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 1)
			wantLabelValues(t, plan, zone, "test-zone-b")
		},
	}, {
		name:  "minValues strict: a key the pod narrows to enough values keeps them",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default", requiring(family, corev1.NodeSelectorOpExists, new(2)))}},
		batch: pods(1, "web", "1", "1Gi", requireNode(family, "c5", "m5")),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 1)
			nc := plan.NewNodeClaims[0].NodeClaim
			wantFamilies(t, nc, "c5", "m5")
		},
	}, {
		name:  "minValues best effort: a key the pod narrows to enough values is not relaxed",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default", requiring(family, corev1.NodeSelectorOpExists, new(2)))}},
		batch: pods(1, "web", "1", "1Gi", requireNode(family, "c5", "m5")),
		opts:  []solverOption{withMinValues(MinValuesBestEffort)},
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 1)
			nc := plan.NewNodeClaims[0].NodeClaim
			wantFamilies(t, nc, "c5", "m5")
			if _, relaxed := nc.Annotations[karpv1.NodeClaimMinValuesRelaxedAnnotationKey]; relaxed {
				t.Errorf("minValues relaxed: %v", nc.Annotations)
			}
		},
	}, {
		name:  "a pod narrowing a chosen key further joins the claim with the intersection",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default")}},
		batch: append(pods(1, "wide", "2", "1Gi", requireNode(family, "c5", "m5", "r5")), pods(1, "narrow", "1", "1Gi", requireNode(family, "m5", "r5"))...),
		check: func(t *testing.T, plan *simulation.Plan) {
			wantClaims(t, plan, 1)
			wantFamilies(t, plan.NewNodeClaims[0].NodeClaim, "m5", "r5")
		},
	}, {
		name:  "a key some pod spreads on is decided, also for a pod that only narrows it",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default", threeZones())}},
		// pinned (largest, placed first) allows two zones and is counted by the spread of
		// the others: its NodeClaim must be held to the zone its node was counted in.
		batch: append(pods(1, "pinned", "2", "1Gi", labelled("app", "web"), requireNode(zone, "test-zone-a", "test-zone-b")),
			pods(3, "web", "1", "1Gi", labelled("app", "web"), testpods.Spread(zone, "web", corev1.DoNotSchedule))...),
		check: func(t *testing.T, plan *simulation.Plan) {
			for _, c := range plan.NewNodeClaims {
				if values := requirement(c.NodeClaim, zone).Values(); len(values) != 1 {
					t.Errorf("nodeclaim with pods %v allows zones %v, want one", podNames(c.Pods), values)
				}
			}
			if len(plan.Unschedulable) != 0 {
				t.Errorf("unschedulable %v", plan.Unschedulable)
			}
		},
	}, {
		name: "a NodeClaim in flight takes pods that accept each of its families, not one that narrows them",
		state: &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default")}, NodeClaimList: []*karpv1.NodeClaim{{
			ObjectMeta: metav1.ObjectMeta{Name: "default-fgh", Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}},
			Spec: karpv1.NodeClaimSpec{Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: karpv1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"default"}},
				{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"c5.xlarge", "m5.xlarge"}},
				{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
				{Key: family, Operator: corev1.NodeSelectorOpIn, Values: []string{"c5", "m5"}},
			}},
		}}},
		batch: append(pods(1, "either", "1", "1Gi", requireNode(family, "c5", "m5")), pods(1, "only-c5", "1", "1Gi", requireNode(family, "c5"))...),
		check: func(t *testing.T, plan *simulation.Plan) {
			if plan.InFlight["uid-either-0"] != "default-fgh" {
				t.Errorf("in flight %v, want either-0 on default-fgh", plan.InFlight)
			}
			// What the NodeClaim, immutable, must launch for: the pod it took (no daemons here).
			if got := plan.InFlightRequests["default-fgh"]; got.Cpu().Cmp(resource.MustParse("1")) != 0 || got.Memory().Cmp(resource.MustParse("1Gi")) != 0 || len(plan.InFlightRequests) != 1 {
				t.Errorf("in-flight requests %v, want default-fgh's: 1 cpu, 1Gi", plan.InFlightRequests)
			}
			// The node the Filters see for the NodeClaim carries family c5, but it may launch
			// as m5.
			if _, ok := plan.InFlight["uid-only-c5-0"]; ok {
				t.Errorf("only-c5-0 planned onto a NodeClaim that may launch as m5")
			}
			wantClaims(t, plan, 1)
			wantFamilies(t, plan.NewNodeClaims[0].NodeClaim, "c5")
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := planAndVerify(t, tc.state, tc.objects, tc.batch, tc.opts...)
			tc.check(t, plan)
		})
	}
}

const (
	family = "karpenter.k8s.aws/instance-family"
	rack   = "example.com/rack"
)

// labelValues lists the values of the label key on the plan's new NodeClaims, sorted.
func labelValues(plan *simulation.Plan, key string) []string {
	var values []string
	for _, c := range plan.NewNodeClaims {
		values = append(values, c.NodeClaim.Labels[key])
	}
	slices.Sort(values)
	return values
}

func wantLabelValues(t *testing.T, plan *simulation.Plan, key string, want ...string) {
	t.Helper()
	if got := labelValues(plan, key); !slices.Equal(got, want) {
		t.Errorf("%s labels %v, want %v", key, got, want)
	}
}

// wantFamilies checks that nc allows exactly the instance families want and that its
// instance types cover each of them and no other.
func wantFamilies(t *testing.T, nc *karpv1.NodeClaim, want ...string) {
	t.Helper()
	if got := requirement(nc, family).Values(); !slices.Equal(got, want) {
		t.Errorf("family requirement %v, want %v", got, want)
	}
	byName := map[string]*cloudprovider.InstanceType{}
	for _, it := range kwokTypes(t) {
		byName[it.Name] = it
	}
	covered := map[string]bool{}
	for _, name := range instanceTypes(nc) {
		f := byName[name].Requirements.Get(family).Any()
		if !slices.Contains(want, f) {
			t.Errorf("instance type %s of family %s, want only %v", name, f, want)
		}
		covered[f] = true
	}
	if len(covered) != len(want) {
		t.Errorf("instance types cover families %v, want %v", covered, want)
	}
}

func wantClaims(t *testing.T, plan *simulation.Plan, n int) {
	t.Helper()
	if len(plan.NewNodeClaims) != n {
		var desc []string
		for _, c := range plan.NewNodeClaims {
			desc = append(desc, c.NodeClaim.Labels[karpv1.NodePoolLabelKey]+"/"+c.NodeClaim.Labels[zone]+":"+strings.Join(podNames(c.Pods), ","))
		}
		t.Fatalf("new nodeclaims %d, want %d: %v; unschedulable %v", len(plan.NewNodeClaims), n, desc, plan.Unschedulable)
	}
}

func podNames(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}

func wantPool(t *testing.T, nc *karpv1.NodeClaim, name string) {
	t.Helper()
	if got := nc.Labels[karpv1.NodePoolLabelKey]; got != name {
		t.Errorf("nodepool %q, want %q", got, name)
	}
}

func wantUnschedulable(t *testing.T, plan *simulation.Plan, uid, substring string) {
	t.Helper()
	for k, why := range plan.Unschedulable {
		if string(k) == uid {
			if !strings.Contains(why, substring) {
				t.Errorf("reason %q does not mention %q", why, substring)
			}
			return
		}
	}
	t.Errorf("pod %s is not unschedulable: %v", uid, plan.Unschedulable)
}

// assertCheapestFirst checks that the listed types are in non-decreasing price order.
func assertCheapestFirst(t *testing.T, nc *karpv1.NodeClaim, names []string) {
	t.Helper()
	reqs := scheduling.FromNodeSelectorRequirementsWithMinValues(nc.Spec.Requirements...)
	byName := map[string]*cloudprovider.InstanceType{}
	for _, it := range kwokTypes(t) {
		byName[it.Name] = it
	}
	last := 0.0
	for _, name := range names {
		price := byName[name].CheapestPrice(reqs)
		if price < last {
			t.Fatalf("instance types not cheapest first at %s (%v < %v)", name, price, last)
		}
		last = price
	}
}

func TestChooseValues(t *testing.T) {
	in := func(key string, values ...string) *scheduling.Requirement {
		return scheduling.NewRequirement(key, corev1.NodeSelectorOpIn, values...)
	}
	const generation = "karpenter.k8s.aws/instance-generation"
	cases := []struct {
		name  string
		reqs  scheduling.Requirements
		keys  []string
		prior map[string]string
		want  map[string]string
	}{{
		name: "a key left with several values gets its first candidate value",
		reqs: scheduling.NewRequirements(in(family, "m5", "c5")),
		keys: []string{family},
		want: map[string]string{family: "c5"},
	}, {
		name: "a decided key needs no chosen value",
		reqs: scheduling.NewRequirements(in(family, "m5")),
		keys: []string{family},
		want: nil,
	}, {
		name:  "a prior value still allowed is kept, also for a key the attempt does not name",
		reqs:  scheduling.NewRequirements(in(family, "c5", "m5"), in(generation, "5", "6")),
		keys:  []string{generation},
		prior: map[string]string{family: "m5"},
		want:  map[string]string{family: "m5", generation: "5"},
	}, {
		name:  "a prior value no longer allowed is replaced",
		reqs:  scheduling.NewRequirements(in(family, "m5", "r5")),
		keys:  []string{family},
		prior: map[string]string{family: "c5"},
		want:  map[string]string{family: "m5"},
	}, {
		name:  "a prior value for a key now decided is dropped",
		reqs:  scheduling.NewRequirements(in(family, "m5")),
		prior: map[string]string{family: "m5"},
		want:  nil,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := chooseValues(tc.reqs, kwokTypes(t), tc.keys, tc.prior); !maps.Equal(got, tc.want) {
				t.Errorf("chosen %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPreferenceMasks(t *testing.T) {
	cases := []struct {
		n    int
		want []uint64
	}{
		{0, []uint64{0}},
		{1, []uint64{1, 0}},
		// Heaviest first: 100, 10, 1 are the first, second and third preference.
		{3, []uint64{0b111, 0b110, 0b101, 0b100, 0b011, 0b010, 0b001, 0}},
		// Past maxEnumeratedPreferences: the lightest dropped one at a time.
		{8, []uint64{0xff, 0xfe, 0xfc, 0xf8, 0xf0, 0xe0, 0xc0, 0x80, 0}},
	}
	for _, tc := range cases {
		if got := preferenceMasks(tc.n); !slices.Equal(got, tc.want) {
			t.Errorf("preferenceMasks(%d) = %b, want %b", tc.n, got, tc.want)
		}
	}
}

func uidsOf(pods []*corev1.Pod) []types.UID {
	out := make([]types.UID, len(pods))
	for i, p := range pods {
		out[i] = p.UID
	}
	return out
}
