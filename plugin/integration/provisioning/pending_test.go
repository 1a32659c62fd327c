package provisioning

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider/kwok/catalog"
)

// runPendingSolverFixes adds pendingSolverFixScenarios to TestProvisioning. They fail today
// because of solver bugs in simulation/solver, described on each case; set it to true once the
// solver is fixed.
const runPendingSolverFixes = false

// pendingSolverFixScenarios are behaviours of the issue the solver gets wrong today.
func pendingSolverFixScenarios() []scenario {
	return []scenario{{
		// BUG: a key the pod's required node affinity constrains is narrowed to one value on
		// a new NodeClaim (solver openKeys/combinations in place.go), although no Filter needs
		// it decided; each one-family combination then fails minValues 2 under Strict. Got: the
		// pod is unschedulable, "no NodePool fits: nodepool "default": no instance type fits
		// the pod with its daemons". Want: one NodeClaim, family In [c5 m5], the c5 and m5
		// types cheapest first. (Under BestEffort the NodeClaim gets family In [c5] only.)
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
		// BUG: PodTopologySpread on a custom key sees only the domains of nodes in the
		// snapshot; the solver adds placeholder domains for zone, capacity type, arch and os
		// (domains.go) but not for the values a NodePool's requirements declare for other keys.
		// Got: 1 NodeClaim with rack-1 and both pods. Want (Karpenter counts every value the
		// NodePool allows as a domain): 2 NodeClaims, rack-1 and rack-2.
		name:      "custom-key topology: spread over a user-defined label's values",
		nodePools: []*karpv1.NodePool{nodePool("default", requires("example.com/rack", corev1.NodeSelectorOpIn, nil, "rack-1", "rack-2"))},
		pods:      pods(2, "web", "1", "1Gi", labelled("app", "web"), spread("example.com/rack", "web", corev1.DoNotSchedule)),
		check: func(t *testing.T, o *outcome) {
			o.wantClaims(t, 2)
			if got := o.distinctLabels(t, "example.com/rack"); got["rack-1"] != 1 || got["rack-2"] != 1 {
				t.Errorf("racks %v, want rack-1 and rack-2", got)
			}
		},
	}, {
		// BUG (these three volume cases): volume topology keys (a bound PV's node affinity, a
		// WaitForFirstConsumer StorageClass's allowedTopologies) are not among the open keys
		// the solver narrows (openKeys: topology keys, pod requirements, anti-affinity keys),
		// so the hypothetical node has no zone label when VolumeBinding runs. Got: the pod is
		// unschedulable, "no NodePool fits: nodepool "default": VolumeBinding: node(s) didn't
		// match PersistentVolume's node affinity" (WaitForFirstConsumer: "didn't find
		// available persistent volumes to bind"). Want: one NodeClaim in the volume's zone.
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
		// The EBS CSI key must also be on the node the Filters see (as the CSI driver's
		// registration puts it on real nodes), or VolumeBinding rejects it whatever its zone.
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
