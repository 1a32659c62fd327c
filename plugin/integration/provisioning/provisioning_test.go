package provisioning

import (
	"cmp"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/kwok/catalog"
	"github.com/joinery-dev/joinery/internal/testpods"
)

const zone = corev1.LabelTopologyZone

func threeZones() func(*karpv1.NodePool) {
	return requires(zone, corev1.NodeSelectorOpIn, nil, zones...)
}

// cheapestFirst lists the catalog's types that keep accepts, ordered by their cheapest
// offering among capacityTypes (then by name): what a NodeClaim must list, worked out from
// the catalog file alone.
func cheapestFirst(keep func(catalog.InstanceType) bool, capacityTypes ...string) []string {
	type priced struct {
		name  string
		price float64
	}
	var list []priced
	for _, it := range testCatalog().InstanceTypes {
		if !keep(it) {
			continue
		}
		best := -1.0
		for _, o := range it.Offerings {
			if slices.Contains(capacityTypes, o.CapacityType) && (best < 0 || o.Price < best) {
				best = o.Price
			}
		}
		if best >= 0 {
			list = append(list, priced{it.Name, best})
		}
	}
	slices.SortFunc(list, func(a, b priced) int { return cmp.Or(cmp.Compare(a.price, b.price), cmp.Compare(a.name, b.name)) })
	out := make([]string, len(list))
	for i, p := range list {
		out[i] = p.name
	}
	return out
}

var spotOrOnDemand = []string{karpv1.CapacityTypeSpot, karpv1.CapacityTypeOnDemand}

func allTypes(catalog.InstanceType) bool { return true }

func wantRequests(t *testing.T, nc *karpv1.NodeClaim, cpu, memory string, pods int64) {
	t.Helper()
	requests := nc.Spec.Resources.Requests
	for name, want := range map[corev1.ResourceName]resource.Quantity{
		corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory), corev1.ResourcePods: *resource.NewQuantity(pods, resource.DecimalSI),
	} {
		if got := requests[name]; got.Cmp(want) != 0 {
			t.Errorf("NodeClaim %s requests %s %s, want %s", nc.Name, name, got.String(), want.String())
		}
	}
}

// TestProvisioning runs one case per provisioning behaviour of the solver, end to end.
func TestProvisioning(t *testing.T) {
	e := testEnv(t)
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) { e.run(t, sc) })
	}
}

func scenarios() []scenario {
	return []scenario{{
		name:      "plain pods pack onto one NodeClaim of the NodePool's template",
		nodePools: []*karpv1.NodePool{nodePool("default", templateLabels(map[string]string{"example.com/owner": "platform"}))},
		pods:      pods(10, "web", "1", "1Gi"),
		check: func(t *testing.T, o *outcome) {
			o.wantClaims(t, 1)
			nc := o.claims[0]
			if got := o.podsOn(nc); len(got) != 10 {
				t.Errorf("NodeClaim %s plans %v, want the 10 pods", nc.Name, got)
			}
			if nc.GenerateName != "default-" || nc.Name == "default-" {
				t.Errorf("NodeClaim name %q (generateName %q), want default-<suffix>", nc.Name, nc.GenerateName)
			}
			if refs := nc.OwnerReferences; len(refs) != 1 || refs[0].Kind != "NodePool" || refs[0].Name != "default" || refs[0].UID == "" {
				t.Errorf("owner references %+v, want the NodePool default", refs)
			}
			if ref := nc.Spec.NodeClassRef; ref == nil || ref.Kind != "KWOKNodeClass" || ref.Name != nodeClass {
				t.Errorf("nodeClassRef %+v", ref)
			}
			wantLabel(t, nc, karpv1.NodePoolLabelKey, "default")
			wantLabel(t, nc, "example.com/owner", "platform")
			wantRequirement(t, nc, corev1.LabelOSStable, "linux")
			wantRequirement(t, nc, karpv1.CapacityTypeLabelKey, spotOrOnDemand...)
			wantRequests(t, nc, "10", "10Gi", 10)
			// 10 cpu fit only the 16-vCPU types and up: all of them, cheapest first.
			wantTypes(t, nc, cheapestFirst(func(it catalog.InstanceType) bool { return it.CPU >= 16 }, spotOrOnDemand...)...)
		},
	}, {
		name:      "instance types: cheapest first, truncated to 60",
		nodePools: []*karpv1.NodePool{nodePool("default")},
		pods:      []*corev1.Pod{pod("tiny", "100m", "128Mi")},
		check: func(t *testing.T, o *outcome) {
			o.wantClaims(t, 1)
			all := cheapestFirst(allTypes, spotOrOnDemand...)
			if len(all) != numberOfTypes {
				t.Fatalf("the catalog prices %d types, want %d", len(all), numberOfTypes)
			}
			wantTypes(t, o.claims[0], all[:60]...)
		},
	}, {
		name: "pods largest first: first-fit decreasing packs four pods onto two nodes",
		// 8-vCPU nodes hold 7.91 cpu: 4+3 fits twice. Taken in name order (3, 3, 4, 4) the
		// pods would need three nodes.
		nodePools: []*karpv1.NodePool{nodePool("default", requires(sizeLabel, corev1.NodeSelectorOpIn, nil, "2xlarge"))},
		pods:      join(pods(2, "alpha", "3", "1Gi"), pods(2, "beta", "4", "1Gi")),
		check: func(t *testing.T, o *outcome) {
			o.wantClaims(t, 2)
			for _, nc := range o.claims {
				got := o.podsOn(nc)
				if len(got) != 2 || got[0][:5] != "alpha" || got[1][:4] != "beta" {
					t.Errorf("NodeClaim %s plans %v, want one alpha and one beta", nc.Name, got)
				}
				wantRequests(t, nc, "7", "2Gi", 2)
				wantTypes(t, nc, "c6g.2xlarge", "m6g.2xlarge", "c5.2xlarge", "m5.2xlarge", "r6g.2xlarge", "c7a.2xlarge", "m7a.2xlarge", "r5.2xlarge", "r7a.2xlarge")
			}
		},
	}, {
		name:      "NodePools in weight order",
		nodePools: []*karpv1.NodePool{nodePool("light", weight(10)), nodePool("heavy", weight(50)), nodePool("plain")},
		pods:      pods(2, "web", "1", "1Gi"),
		check: func(t *testing.T, o *outcome) {
			o.wantClaims(t, 1)
			wantLabel(t, o.claims[0], karpv1.NodePoolLabelKey, "heavy")
			if refs := o.claims[0].OwnerReferences; len(refs) != 1 || refs[0].Name != "heavy" {
				t.Errorf("owner references %+v, want the NodePool heavy", refs)
			}
		},
	}, {
		name:      "a NodePool that is not Ready is skipped",
		nodePools: []*karpv1.NodePool{nodePool("broken", weight(90), notReady), nodePool("default")},
		pods:      pods(1, "web", "1", "1Gi"),
		check: func(t *testing.T, o *outcome) {
			o.wantClaims(t, 1)
			wantLabel(t, o.claims[0], karpv1.NodePoolLabelKey, "default")
		},
	}, {
		name: "taints must be tolerated, startupTaints need not be",
		nodePools: []*karpv1.NodePool{
			nodePool("gpu", weight(90),
				taints(corev1.Taint{Key: "example.com/gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}),
				startupTaints(corev1.Taint{Key: "example.com/init", Value: "true", Effect: corev1.TaintEffectNoSchedule})),
			nodePool("default"),
		},
		pods: []*corev1.Pod{pod("web", "1", "1Gi"), pod("train", "1", "1Gi", testpods.Tolerating("example.com/gpu"))},
		check: func(t *testing.T, o *outcome) {
			o.wantClaims(t, 2)
			gpu, plain := o.claim(t, "train"), o.claim(t, "web")
			wantLabel(t, gpu, karpv1.NodePoolLabelKey, "gpu")
			wantLabel(t, plain, karpv1.NodePoolLabelKey, "default")
			if got := gpu.Spec.Taints; len(got) != 1 || got[0].Key != "example.com/gpu" {
				t.Errorf("gpu NodeClaim taints %v", got)
			}
			if got := gpu.Spec.StartupTaints; len(got) != 1 || got[0].Key != "example.com/init" {
				t.Errorf("gpu NodeClaim startupTaints %v", got)
			}
			if len(plain.Spec.Taints)+len(plain.Spec.StartupTaints) != 0 {
				t.Errorf("default NodeClaim taints %v %v, want none", plain.Spec.Taints, plain.Spec.StartupTaints)
			}
		},
	}, {
		name:      "limits count in-flight NodeClaims",
		nodePools: []*karpv1.NodePool{nodePool("default", limits(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")}))},
		// An m5.2xlarge (8 cpu) launching leaves 2 cpu of the limit: the 6-cpu pod joins it,
		// the 4-cpu pod would need a new 8-cpu node.
		objects: func(string) []client.Object {
			return []client.Object{inFlightNodeClaim("default-inflight", "default", "m5.2xlarge")}
		},
		pods:          []*corev1.Pod{pod("huge", "6", "1Gi"), pod("big", "4", "1Gi")},
		unschedulable: map[string]string{"big": "limits"},
		check: func(t *testing.T, o *outcome) {
			o.wantClaims(t, 1)
			if nc := o.claim(t, "huge"); nc.Name != "default-inflight" {
				t.Errorf("huge is planned onto %s, want the in-flight default-inflight", nc.Name)
			}
		},
	}, {
		name: "template labels and requirements intersect with the pod's",
		nodePools: []*karpv1.NodePool{nodePool("default",
			templateLabels(map[string]string{"example.com/team": "payments"}),
			requires(zone, corev1.NodeSelectorOpIn, nil, "test-zone-a", "test-zone-b"),
			requires(corev1.LabelArchStable, corev1.NodeSelectorOpIn, nil, "amd64"),
			requires(familyLabel, corev1.NodeSelectorOpIn, nil, "c5", "m5"))},
		pods: []*corev1.Pod{
			pod("b", "1", "1Gi", testpods.Selecting(zone, "test-zone-b"), testpods.Selecting("example.com/team", "payments"), requireNodeTerms(in(familyLabel, "m5", "r5"))),
			pod("c", "1", "1Gi", testpods.Selecting(zone, "test-zone-c")),
			pod("other-team", "1", "1Gi", testpods.Selecting("example.com/team", "search")),
		},
		unschedulable: map[string]string{"c": "zone", "other-team": "example.com/team"},
		check: func(t *testing.T, o *outcome) {
			o.wantClaims(t, 1)
			nc := o.claim(t, "b")
			wantLabel(t, nc, "example.com/team", "payments")
			wantLabel(t, nc, zone, "test-zone-b")
			wantLabel(t, nc, familyLabel, "m5")
			wantLabel(t, nc, corev1.LabelArchStable, "amd64")
			wantRequirement(t, nc, zone, "test-zone-b")
			wantRequirement(t, nc, familyLabel, "m5")
			wantTypes(t, nc, "m5.large", "m5.xlarge", "m5.2xlarge", "m5.4xlarge", "m5.8xlarge", "m5.12xlarge", "m5.16xlarge")
		},
	}, {
		name:      "a user-defined label declared with Exists gets a value",
		nodePools: []*karpv1.NodePool{nodePool("default", requires("example.com/team", corev1.NodeSelectorOpExists, nil))},
		pods: []*corev1.Pod{
			pod("any", "1", "1Gi"),
			pod("red", "1", "1Gi", testpods.Selecting("example.com/team", "red"), testpods.AntiAffine(corev1.LabelHostname, "any"), labelled("app", "red")),
			pod("undeclared", "1", "1Gi", testpods.Selecting("example.com/other", "blue")),
		},
		unschedulable: map[string]string{"undeclared": "example.com/other"},
		check: func(t *testing.T, o *outcome) {
			for _, nc := range o.claims {
				value := nc.Labels["example.com/team"]
				if value == "" {
					t.Errorf("NodeClaim %s has no example.com/team label: %v", nc.Name, nc.Labels)
					continue
				}
				wantRequirement(t, nc, "example.com/team", value)
			}
			wantLabel(t, o.claim(t, "red"), "example.com/team", "red")
		},
	}, {
		name:          "minValues Strict: too few families leave the pod unschedulable",
		nodePools:     []*karpv1.NodePool{armComputeOrGeneral(3)},
		pods:          pods(1, "web", "1", "1Gi"),
		unschedulable: map[string]string{"web-0": "minValues"},
	}, {
		name:      "minValues BestEffort: relaxed to what the types allow, and annotated",
		args:      map[string]any{"minValuesPolicy": "BestEffort"},
		nodePools: []*karpv1.NodePool{armComputeOrGeneral(3)},
		pods:      pods(1, "web", "1", "1Gi"),
		check: func(t *testing.T, o *outcome) {
			o.wantClaims(t, 1)
			nc := o.claims[0]
			if got := nc.Annotations[karpv1.NodeClaimMinValuesRelaxedAnnotationKey]; got != "true" {
				t.Errorf("annotation %s = %q, want true", karpv1.NodeClaimMinValuesRelaxedAnnotationKey, got)
			}
			if r := requirement(nc, familyLabel); r == nil || r.Operator != corev1.NodeSelectorOpExists || r.MinValues == nil || *r.MinValues != 2 {
				t.Errorf("family requirement %+v, want Exists with minValues 2", r)
			}
			wantTypes(t, nc, cheapestFirst(func(it catalog.InstanceType) bool {
				return it.Arch == "arm64" && (familyOf(it.Name) == "c6g" || familyOf(it.Name) == "m6g")
			}, spotOrOnDemand...)...)
		},
	}, {
		name:      "minValues lists more types than the maximum when it needs them",
		args:      map[string]any{"maxInstanceTypes": 5},
		nodePools: []*karpv1.NodePool{nodePool("default", requires(familyLabel, corev1.NodeSelectorOpExists, new(numberOfFamily)))},
		pods:      []*corev1.Pod{pod("tiny", "100m", "128Mi")},
		check: func(t *testing.T, o *outcome) {
			o.wantClaims(t, 1)
			// The five cheapest, then the cheapest type of each family still missing.
			all := cheapestFirst(allTypes, spotOrOnDemand...)
			want := slices.Clone(all[:5])
			families := map[string]bool{}
			for _, name := range want {
				families[familyOf(name)] = true
			}
			for _, name := range all[5:] {
				if !families[familyOf(name)] {
					families[familyOf(name)] = true
					want = append(want, name)
				}
			}
			wantTypes(t, o.claims[0], want...)
			if len(families) != numberOfFamily {
				t.Fatalf("the catalog has %d families, want %d", len(families), numberOfFamily)
			}
		},
	}, {
		name:      "preferred node affinity under Respect: the heaviest satisfiable preference wins",
		nodePools: []*karpv1.NodePool{nodePool("default", threeZones())},
		pods:      []*corev1.Pod{pod("web", "500m", "512Mi", testpods.PreferNode(50, zone, "test-zone-c"), testpods.PreferNode(10, zone, "test-zone-d"))},
		check: func(t *testing.T, o *outcome) {
			o.wantClaims(t, 1)
			wantLabel(t, o.claims[0], zone, "test-zone-c")
			wantRequirement(t, o.claims[0], zone, "test-zone-c")
		},
	}, {
		name:      "preferred node affinity under Ignore leaves the zone open",
		args:      map[string]any{"preferencePolicy": "Ignore"},
		nodePools: []*karpv1.NodePool{nodePool("default", threeZones())},
		pods:      []*corev1.Pod{pod("web", "500m", "512Mi", testpods.PreferNode(50, zone, "test-zone-c"))},
		check: func(t *testing.T, o *outcome) {
			o.wantClaims(t, 1)
			wantNoLabel(t, o.claims[0], zone)
			wantRequirement(t, o.claims[0], zone, zones...)
		},
	}, {
		name:      "preferred pod anti-affinity under Respect: one node per pod",
		nodePools: []*karpv1.NodePool{nodePool("default")},
		pods:      pods(3, "web", "500m", "512Mi", labelled("app", "web"), testpods.PreferAntiAffine(10, corev1.LabelHostname, "web")),
		check:     func(t *testing.T, o *outcome) { o.wantClaims(t, 3) },
	}, {
		name:      "preferred pod anti-affinity under Ignore: packed",
		args:      map[string]any{"preferencePolicy": "Ignore"},
		nodePools: []*karpv1.NodePool{nodePool("default")},
		pods:      pods(3, "web", "500m", "512Mi", labelled("app", "web"), testpods.PreferAntiAffine(10, corev1.LabelHostname, "web")),
		check:     func(t *testing.T, o *outcome) { o.wantClaims(t, 1) },
	}, {
		name:      "ScheduleAnyway zone spread under Respect: spread over the zones",
		nodePools: []*karpv1.NodePool{nodePool("default", threeZones())},
		pods:      pods(3, "web", "500m", "512Mi", labelled("app", "web"), testpods.Spread(zone, "web", corev1.ScheduleAnyway)),
		check: func(t *testing.T, o *outcome) {
			o.wantClaims(t, 3)
			if got := o.distinctLabels(t, zone); len(got) != 3 {
				t.Errorf("zones %v, want three distinct", got)
			}
		},
	}, {
		name:      "ScheduleAnyway zone spread under Ignore: packed",
		args:      map[string]any{"preferencePolicy": "Ignore"},
		nodePools: []*karpv1.NodePool{nodePool("default", threeZones())},
		pods:      pods(3, "web", "500m", "512Mi", labelled("app", "web"), testpods.Spread(zone, "web", corev1.ScheduleAnyway)),
		check:     func(t *testing.T, o *outcome) { o.wantClaims(t, 1) },
	}, {
		name:      "required node affinity terms are tried in order",
		nodePools: []*karpv1.NodePool{nodePool("default", threeZones())},
		pods: []*corev1.Pod{
			pod("c-first", "1", "1Gi", requireNodeTerms(in(zone, "test-zone-c"), in(zone, "test-zone-a"))),
			pod("d-first", "1", "1Gi", requireNodeTerms(in(zone, "test-zone-d"), in(zone, "test-zone-a"))),
		},
		check: func(t *testing.T, o *outcome) {
			o.wantClaims(t, 2)
			wantLabel(t, o.claim(t, "c-first"), zone, "test-zone-c")
			wantLabel(t, o.claim(t, "d-first"), zone, "test-zone-a")
		},
	}, {
		name:      "zone spread: one NodeClaim per zone",
		nodePools: []*karpv1.NodePool{nodePool("default", threeZones())},
		pods:      pods(3, "spread", "1", "1Gi", labelled("app", "spread"), testpods.Spread(zone, "spread", corev1.DoNotSchedule)),
		check: func(t *testing.T, o *outcome) {
			o.wantClaims(t, 3)
			if got := o.distinctLabels(t, zone); len(got) != 3 {
				t.Errorf("zones %v, want three distinct", got)
			}
			for _, nc := range o.claims {
				wantRequirement(t, nc, zone, nc.Labels[zone])
			}
		},
	}, {
		name:      "hostname anti-affinity: one pod per NodeClaim",
		nodePools: []*karpv1.NodePool{nodePool("default")},
		pods:      pods(4, "db", "500m", "512Mi", labelled("app", "db"), testpods.AntiAffine(corev1.LabelHostname, "db")),
		check: func(t *testing.T, o *outcome) {
			o.wantClaims(t, 4)
			for _, nc := range o.claims {
				if got := o.podsOn(nc); len(got) != 1 {
					t.Errorf("NodeClaim %s plans %v, want one pod", nc.Name, got)
				}
			}
		},
	}, {
		name:      "capacity-type spread: one spot, one on-demand",
		nodePools: []*karpv1.NodePool{nodePool("default")},
		pods:      pods(2, "web", "1", "1Gi", labelled("app", "web"), testpods.Spread(karpv1.CapacityTypeLabelKey, "web", corev1.DoNotSchedule)),
		check: func(t *testing.T, o *outcome) {
			o.wantClaims(t, 2)
			got := o.distinctLabels(t, karpv1.CapacityTypeLabelKey)
			if got[karpv1.CapacityTypeSpot] != 1 || got[karpv1.CapacityTypeOnDemand] != 1 {
				t.Errorf("capacity types %v, want one spot and one on-demand", got)
			}
			for _, nc := range o.claims {
				wantRequirement(t, nc, karpv1.CapacityTypeLabelKey, nc.Labels[karpv1.CapacityTypeLabelKey])
			}
		},
	}, {
		name:      "host ports: pods on the same port get separate nodes; a daemon's port is taken",
		nodePools: []*karpv1.NodePool{nodePool("default")},
		objects: func(string) []client.Object {
			return []client.Object{daemonSet("exporter", "100m", "64Mi", testpods.HostPort(9100))}
		},
		pods:          join(pods(2, "web", "1", "1Gi", testpods.HostPort(8080)), pods(1, "metrics", "100m", "64Mi", testpods.HostPort(9100))),
		unschedulable: map[string]string{"metrics-0": "NodePorts"},
		check: func(t *testing.T, o *outcome) {
			o.wantClaims(t, 2)
			if o.claim(t, "web-0") == o.claim(t, "web-1") {
				t.Errorf("web-0 and web-1 share NodeClaim %s", o.claim(t, "web-0").Name)
			}
		},
	}, {
		name: "daemonset overhead: daemons that would land on the node count",
		nodePools: []*karpv1.NodePool{
			nodePool("dedicated", weight(10), taints(corev1.Taint{Key: "dedicated", Value: "true", Effect: corev1.TaintEffectNoSchedule})),
			nodePool("default"),
		},
		objects: func(string) []client.Object {
			return []client.Object{
				daemonSet("agent", "1", "1Gi"),                                                   // untainted nodes only
				daemonSet("everywhere", "500m", "256Mi", tolerateEverything),                     // every node
				daemonSet("elsewhere", "2", "2Gi", testpods.Selecting("example.com/never", "x")), // no node of these pools
			}
		},
		pods: []*corev1.Pod{pod("web", "1", "1Gi"), pod("isolated", "1", "1Gi", testpods.Tolerating("dedicated"))},
		check: func(t *testing.T, o *outcome) {
			o.wantClaims(t, 2)
			web, isolated := o.claim(t, "web"), o.claim(t, "isolated")
			wantLabel(t, web, karpv1.NodePoolLabelKey, "default")
			wantLabel(t, isolated, karpv1.NodePoolLabelKey, "dedicated")
			wantRequests(t, web, "2500m", "2304Mi", 3)
			wantRequests(t, isolated, "1500m", "1280Mi", 2)
		},
	}, {
		name:      "offerings recorded unavailable are skipped",
		nodePools: []*karpv1.NodePool{nodePool("default", requires(familyLabel, corev1.NodeSelectorOpIn, nil, "c6g"))},
		objects: func(string) []client.Object {
			until := time.Now().Add(cloudprovider.UnavailableOfferingsTTL).UTC().Format(time.RFC3339)
			data := map[string]string{}
			for _, z := range zones {
				for _, ct := range spotOrOnDemand {
					data[cloudprovider.OfferingKey{CapacityType: ct, InstanceType: "c6g.large", Zone: z}.ConfigMapKey()] = until
				}
			}
			data[cloudprovider.OfferingKey{CapacityType: karpv1.CapacityTypeSpot, InstanceType: "c6g.xlarge", Zone: "test-zone-b"}.ConfigMapKey()] = until
			return []client.Object{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cloudprovider.UnavailableOfferingsConfigMap}, Data: data}}
		},
		pods: pods(1, "web", "1", "1Gi"),
		check: func(t *testing.T, o *outcome) {
			o.wantClaims(t, 1)
			// c6g.large has no offering left; c6g.xlarge keeps all but spot in test-zone-b.
			wantTypes(t, o.claims[0], "c6g.xlarge", "c6g.2xlarge", "c6g.4xlarge", "c6g.8xlarge", "c6g.12xlarge", "c6g.16xlarge")
		},
	}, {
		// A key the pod's node affinity narrows but nothing counts domains by keeps every
		// value the pod allows, so minValues 2 holds; the node the Filters see carries one.
		name:      "minValues met when the pod narrows the key to enough values",
		nodePools: []*karpv1.NodePool{nodePool("default", requires(familyLabel, corev1.NodeSelectorOpExists, new(2)))},
		pods:      pods(1, "web", "1", "1Gi", requireNodeTerms(in(familyLabel, "c5", "m5"))),
		check: func(t *testing.T, o *outcome) {
			o.wantClaims(t, 1)
			wantRequirement(t, o.claims[0], familyLabel, "c5", "m5")
			wantTypes(t, o.claims[0], cheapestFirst(func(it catalog.InstanceType) bool {
				return familyOf(it.Name) == "c5" || familyOf(it.Name) == "m5"
			}, spotOrOnDemand...)...)
		},
	}, {
		// Karpenter counts every value a NodePool allows for a spread's key as a domain, the
		// user-defined ones included.
		name:      "custom-key topology: spread over a user-defined label's values",
		nodePools: []*karpv1.NodePool{nodePool("default", requires("example.com/rack", corev1.NodeSelectorOpIn, nil, "rack-1", "rack-2"))},
		pods:      pods(2, "web", "1", "1Gi", labelled("app", "web"), testpods.Spread("example.com/rack", "web", corev1.DoNotSchedule)),
		check: func(t *testing.T, o *outcome) {
			o.wantClaims(t, 2)
			if got := o.distinctLabels(t, "example.com/rack"); got["rack-1"] != 1 || got["rack-2"] != 1 {
				t.Errorf("racks %v, want rack-1 and rack-2", got)
			}
		},
	}, {
		name:      "volume topology: a bound volume's node affinity picks the zone",
		nodePools: []*karpv1.NodePool{nodePool("default", threeZones())},
		objects: func(ns string) []client.Object {
			pv, pvc := boundVolume(ns, ns+"-data", "data", "manual", zone, "test-zone-b")
			return []client.Object{pv, pvc}
		},
		pods: []*corev1.Pod{pod("db", "1", "1Gi", mountingClaim("data"))},
		check: func(t *testing.T, o *outcome) {
			o.wantClaims(t, 1)
			wantLabel(t, o.claims[0], zone, "test-zone-b")
		},
	}, {
		name:      "volume topology: a WaitForFirstConsumer StorageClass's allowed topologies pick the zone",
		nodePools: []*karpv1.NodePool{nodePool("default", threeZones())},
		objects: func(ns string) []client.Object {
			return []client.Object{waitForFirstConsumer(ns+"-zone-c", "test-zone-c"), pendingClaim("data", ns+"-zone-c")}
		},
		pods: []*corev1.Pod{pod("db", "1", "1Gi", mountingClaim("data"))},
		check: func(t *testing.T, o *outcome) {
			o.wantClaims(t, 1)
			wantLabel(t, o.claims[0], zone, "test-zone-c")
		},
	}, {
		// The EBS CSI key is on the node the Filters see (as the CSI driver's registration
		// puts it on real nodes), with the zone's value.
		name:      "volume topology: the EBS zone key stands for the zone",
		nodePools: []*karpv1.NodePool{nodePool("default", threeZones())},
		objects: func(ns string) []client.Object {
			pv, pvc := boundVolume(ns, ns+"-data", "data", "manual", "topology.ebs.csi.aws.com/zone", "test-zone-a")
			return []client.Object{pv, pvc}
		},
		pods: []*corev1.Pod{pod("db", "1", "1Gi", mountingClaim("data"))},
		check: func(t *testing.T, o *outcome) {
			o.wantClaims(t, 1)
			wantLabel(t, o.claims[0], zone, "test-zone-a")
		},
	}}
}

// armComputeOrGeneral is a NodePool of the arm64 compute and general-purpose types (two
// families: c6g and m6g) that asks for minValues families.
func armComputeOrGeneral(minValues int) *karpv1.NodePool {
	return nodePool("default",
		requires(corev1.LabelArchStable, corev1.NodeSelectorOpIn, nil, "arm64"),
		requires(categoryLabel, corev1.NodeSelectorOpIn, nil, "c", "m"),
		requires(familyLabel, corev1.NodeSelectorOpExists, &minValues))
}

// inFlightNodeClaim is a NodeClaim of pool still launching as instanceType.
func inFlightNodeClaim(name, pool, instanceType string) *karpv1.NodeClaim {
	return &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: pool}},
		Spec: karpv1.NodeClaimSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: nodeClass},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: karpv1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{pool}},
				{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{instanceType}},
				{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
			},
		},
	}
}
