package solver

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/internal/testpods"
	"github.com/joinery-dev/joinery/simulation"
)

func fourZones() poolOption {
	return requiring(zone, corev1.NodeSelectorOpIn, nil, "test-zone-a", "test-zone-b", "test-zone-c", "test-zone-d")
}

func startupTainted(key string) poolOption {
	return func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.StartupTaints = append(np.Spec.Template.Spec.StartupTaints, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule})
	}
}

// spreadPolicies sets the node inclusion policies of the pod's spread constraints.
func spreadPolicies(taints, affinity corev1.NodeInclusionPolicy) podOption {
	return func(p *corev1.Pod) {
		for i := range p.Spec.TopologySpreadConstraints {
			c := &p.Spec.TopologySpreadConstraints[i]
			if taints != "" {
				c.NodeTaintsPolicy = &taints
			}
			if affinity != "" {
				c.NodeAffinityPolicy = &affinity
			}
		}
	}
}

// TestSpreadDomainPolicies: the zones a planned node could launch in are domains of a zone
// spread unless the spread's node inclusion policies exclude them for taints the node keeps
// or labels the pod's node affinity rejects; taints a node loses by itself
// (karpenter.sh/unregistered, the NodePool's startup taints) do not exclude it.
func TestSpreadDomainPolicies(t *testing.T) {
	honor, ignore := corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore
	spread := func(taints, affinity corev1.NodeInclusionPolicy, extra ...podOption) []*corev1.Pod {
		opts := append([]podOption{labelled("app", "web"), testpods.Spread(zone, "web", corev1.DoNotSchedule), spreadPolicies(taints, affinity)}, extra...)
		return pods(6, "web", "1", "1Gi", opts...)
	}
	// Pools over zones c and d whose nodes keep a taint the pods do not tolerate, heavier than
	// the open pool over zones a and b.
	kept := []*karpv1.NodePool{
		nodePool("tainted", weighted(10), requiring(zone, corev1.NodeSelectorOpIn, nil, "test-zone-c", "test-zone-d"), tainted("example.com/dedicated")),
		nodePool("open", requiring(zone, corev1.NodeSelectorOpIn, nil, "test-zone-a", "test-zone-b")),
	}
	inAB := requireNode(zone, "test-zone-a", "test-zone-b")
	cases := []struct {
		name  string
		pools []*karpv1.NodePool
		batch []*corev1.Pod
		// want is the number of pods planned per zone; the rest are unschedulable.
		want map[string]int
	}{{
		name:  "taints Honor, no taints",
		pools: []*karpv1.NodePool{nodePool("default", fourZones())},
		batch: spread(honor, ""),
		want:  map[string]int{"test-zone-a": 2, "test-zone-b": 2, "test-zone-c": 1, "test-zone-d": 1},
	}, {
		name:  "taints Honor, startup taints",
		pools: []*karpv1.NodePool{nodePool("default", fourZones(), startupTainted("example.com/agent-not-ready"))},
		batch: spread(honor, ""),
		want:  map[string]int{"test-zone-a": 2, "test-zone-b": 2, "test-zone-c": 1, "test-zone-d": 1},
	}, {
		name:  "taints Honor, a taint the pods tolerate",
		pools: []*karpv1.NodePool{nodePool("default", fourZones(), tainted("example.com/dedicated"))},
		batch: spread(honor, "", testpods.Tolerating("example.com/dedicated")),
		want:  map[string]int{"test-zone-a": 2, "test-zone-b": 2, "test-zone-c": 1, "test-zone-d": 1},
	}, {
		name:  "taints Honor, zones only a kept taint reaches are no domains",
		pools: kept,
		batch: spread(honor, ""),
		want:  map[string]int{"test-zone-a": 3, "test-zone-b": 3},
	}, {
		name:  "taints Honor with startup taints, zones only a kept taint reaches are no domains",
		pools: []*karpv1.NodePool{kept[0], nodePool("open", requiring(zone, corev1.NodeSelectorOpIn, nil, "test-zone-a", "test-zone-b"), startupTainted("example.com/agent-not-ready"))},
		batch: spread(honor, ""),
		want:  map[string]int{"test-zone-a": 3, "test-zone-b": 3},
	}, {
		name:  "taints Ignore, zones only a kept taint reaches stay domains",
		pools: kept,
		batch: spread(ignore, ""),
		want:  map[string]int{"test-zone-a": 1, "test-zone-b": 1},
	}, {
		name:  "affinity Honor, zones the pods reject are no domains",
		pools: []*karpv1.NodePool{nodePool("default", fourZones())},
		batch: spread("", honor, inAB),
		want:  map[string]int{"test-zone-a": 3, "test-zone-b": 3},
	}, {
		name:  "affinity Honor and taints Honor, startup taints",
		pools: []*karpv1.NodePool{nodePool("default", fourZones(), startupTainted("example.com/agent-not-ready"))},
		batch: spread(honor, honor, inAB),
		want:  map[string]int{"test-zone-a": 3, "test-zone-b": 3},
	}, {
		name:  "affinity Ignore, zones the pods reject stay domains",
		pools: []*karpv1.NodePool{nodePool("default", fourZones())},
		batch: spread("", ignore, inAB),
		want:  map[string]int{"test-zone-a": 1, "test-zone-b": 1},
	}, {
		name:  "affinity Ignore and taints Honor, startup taints",
		pools: []*karpv1.NodePool{nodePool("default", fourZones(), startupTainted("example.com/agent-not-ready"))},
		batch: spread(honor, ignore, inAB),
		want:  map[string]int{"test-zone-a": 1, "test-zone-b": 1},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := planAndVerify(t, &StaticState{NodePoolList: tc.pools}, nil, tc.batch)
			if got := podsPerZone(plan); !maps.Equal(got, tc.want) {
				t.Errorf("pods per zone %v, want %v (unschedulable: %v)", got, tc.want, plan.Unschedulable)
			}
			planned := 0
			for _, n := range tc.want {
				planned += n
			}
			if got := len(plan.Unschedulable); got != len(tc.batch)-planned {
				t.Errorf("%d pods unschedulable, want %d", got, len(tc.batch)-planned)
			}
		})
	}
}

// podsPerZone counts the pods of the plan's new NodeClaims per zone.
func podsPerZone(plan *simulation.Plan) map[string]int {
	out := map[string]int{}
	for _, c := range plan.NewNodeClaims {
		out[c.NodeClaim.Labels[zone]] += len(c.Pods)
	}
	return out
}
