package fidelity

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/e2e/framework"
)

// seed is the specification document the rows cite, by line.
const seed = "seeds/000_ea6cc0ec5bbde25c.txt"

// runningTimeout bounds pending → Running for a row: the batcher waits up to 10 s, launch and
// registration take about a second each on kwok; the rest is room for a loaded machine
// running every row at once.
const runningTimeout = 4 * time.Minute

const (
	zoneKey            = corev1.LabelTopologyZone
	capacityTypeKey    = "karpenter.sh/capacity-type"
	nodePoolKey        = "karpenter.sh/nodepool"
	gpuResource        = corev1.ResourceName("nvidia.com/gpu")
	amdGPUResource     = corev1.ResourceName("amd.com/gpu")
	neuronResource     = corev1.ResourceName("aws.amazon.com/neuron")
	neuronCoreResource = corev1.ResourceName("aws.amazon.com/neuroncore")
	podENIResource     = corev1.ResourceName("vpc.amazonaws.com/pod-eni")
	instanceTypeKey    = corev1.LabelInstanceTypeStable
	familyKey          = "karpenter.k8s.aws/instance-family"
	categoryKey        = "karpenter.k8s.aws/instance-category"
	nvmeKey            = "karpenter.k8s.aws/instance-local-nvme"
	bandwidthKey       = "karpenter.k8s.aws/instance-network-bandwidth"
	ebsZoneKey         = "topology.ebs.csi.aws.com/zone"
	teamKey            = "company.com/team"
	spreadKey          = "capacity-spread"
)

// pool is one NodePool of a row, named <group>-<suffix>; its nodes carry the row's group
// label, which the row's pods select.
type pool struct {
	suffix       string
	weight       int
	cpuLimit     string
	requirements []string // YAML flow mappings
	taints       []string // YAML flow mappings
}

// anyCapacity is a NodePool over every zone, spot and on-demand, amd64 linux.
func anyCapacity(suffix string, extra ...string) pool {
	return pool{suffix: suffix, requirements: append([]string{
		`{key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}`,
		`{key: kubernetes.io/arch, operator: In, values: [amd64]}`,
		`{key: kubernetes.io/os, operator: In, values: [linux]}`,
	}, extra...)}
}

// row is one example of the seed: the NodePools it assumes, the objects and pods it creates,
// and the intent it checks on where the pods run.
type row struct {
	line  int // the seed line the example is on
	name  string
	pools []pool
	setup func(t *testing.T, r *rowRun)
	check func(t *testing.T, r *rowRun, pods []placed)
}

// rowRun is a row being run: its group (every pod and node of the row carries it) and the
// pods it expects to run, per namespace.
type rowRun struct {
	group string
	ns    string
	want  map[string]int
}

// placed is a running pod of a row with its node.
type placed struct {
	pod  corev1.Pod
	node *corev1.Node
}

// TestSchedulingExamples runs every row on the one local cluster, in parallel (each row has
// its own NodePools, namespace and group label).
func TestSchedulingExamples(t *testing.T) {
	for _, rw := range rows() {
		t.Run(fmt.Sprintf("line-%d-%s", rw.line, slug(rw.name)), func(t *testing.T) {
			t.Parallel()
			t.Logf("example at %s:%d", seed, rw.line)
			r := &rowRun{group: framework.UniqueName("fid"), want: map[string]int{}}
			for _, p := range rw.pools {
				createPool(t, r.group, p)
			}
			r.ns = env.Namespace(t)
			rw.setup(t, r)
			var all []placed
			for _, ns := range slices.Sorted(maps.Keys(r.want)) {
				pods := env.AwaitPods(t, ns, framework.GroupLabel+"="+r.group, r.want[ns], runningTimeout, running)
				for _, pod := range pods {
					node, err := env.Client.CoreV1().Nodes().Get(t.Context(), pod.Spec.NodeName, metav1.GetOptions{})
					if err != nil {
						t.Fatalf("get node %s: %v", pod.Spec.NodeName, err)
					}
					all = append(all, placed{pod: pod, node: node})
				}
			}
			checkNoEmptyNodeClaims(t, r, all)
			rw.check(t, r, all)
		})
	}
}

func rows() []row {
	return []row{{
		line:  2344,
		name:  "resource requests, not limits, size the node",
		pools: []pool{anyCapacity("default")},
		setup: func(t *testing.T, r *rowRun) {
			r.pod(t, r.ns, "myapp", "500m", "128Mi", func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("256Mi")}
			})
		},
		check: func(t *testing.T, r *rowRun, pods []placed) {
			wantNodes(t, pods, 1)
			requests := nodeClaimOf(t, pods[0].node).Spec.Resources.Requests
			if cpu := requests[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("500m")) != 0 {
				t.Errorf("NodeClaim requests cpu %s, want the pod's request 500m", cpu.String())
			}
		},
	}, {
		line:  2370,
		name:  "an accelerator limit gets a node with that accelerator",
		pools: []pool{anyCapacity("default")},
		setup: func(t *testing.T, r *rowRun) {
			r.pod(t, r.ns, "gpu", "1", "1Gi", func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{gpuResource: resource.MustParse("1")}
			})
		},
		check: func(t *testing.T, r *rowRun, pods []placed) {
			wantNodes(t, pods, 1)
			if gpus := pods[0].node.Status.Allocatable[gpuResource]; gpus.Value() < 1 {
				t.Errorf("node %s allocates %s nvidia.com/gpu, want at least 1", pods[0].node.Name, gpus.String())
			}
		},
	}, {
		line: 2460,
		name: "deprecated beta labels select as their stable equivalents",
		pools: []pool{{suffix: "default", requirements: []string{
			`{key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}`,
			`{key: kubernetes.io/arch, operator: In, values: [amd64, arm64]}`,
		}}},
		setup: func(t *testing.T, r *rowRun) {
			r.pod(t, r.ns, "beta", "500m", "256Mi", func(p *corev1.Pod) {
				p.Spec.NodeSelector[corev1.LabelFailureDomainBetaZone] = "test-zone-c"
				p.Spec.NodeSelector["beta.kubernetes.io/arch"] = "arm64"
			})
		},
		check: func(t *testing.T, r *rowRun, pods []placed) {
			wantNodes(t, pods, 1)
			wantLabel(t, pods[0].node, zoneKey, "test-zone-c")
			wantLabel(t, pods[0].node, corev1.LabelArchStable, "arm64")
		},
	}, {
		line:  2477,
		name:  "a node selector on zone and capacity type",
		pools: []pool{anyCapacity("default")},
		setup: func(t *testing.T, r *rowRun) {
			r.pod(t, r.ns, "selected", "500m", "256Mi", func(p *corev1.Pod) {
				p.Spec.NodeSelector[zoneKey] = "test-zone-a"
				p.Spec.NodeSelector[capacityTypeKey] = "spot"
			})
		},
		check: func(t *testing.T, r *rowRun, pods []placed) {
			wantNodes(t, pods, 1)
			wantLabel(t, pods[0].node, zoneKey, "test-zone-a")
			wantLabel(t, pods[0].node, capacityTypeKey, "spot")
		},
	}, {
		line:  2464,
		name:  "a user-defined label the NodePool requires to exist can be selected",
		pools: []pool{anyCapacity("default", `{key: example.com/team, operator: Exists}`)},
		setup: func(t *testing.T, r *rowRun) {
			r.pod(t, r.ns, "red", "500m", "256Mi", func(p *corev1.Pod) { p.Spec.NodeSelector["example.com/team"] = "red" })
		},
		check: func(t *testing.T, r *rowRun, pods []placed) {
			wantNodes(t, pods, 1)
			wantLabel(t, pods[0].node, "example.com/team", "red")
		},
	}, {
		// Karpenter's benchmark pods: once the zone anti-affinity cannot be met (past four
		// pods over four zones), it is relaxed but the lighter hostname anti-affinity and
		// zone preference are kept: one node per pod, the fifth in zone a.
		line:  2490,
		name:  "preferences are relaxed only as far as needed",
		pools: []pool{anyCapacity("default")},
		setup: func(t *testing.T, r *rowRun) {
			for i := range 5 {
				r.pod(t, r.ns, fmt.Sprintf("bench-%d", i), "250m", "256Mi", labelled("app", r.group),
					preferNode(5, zoneKey, "test-zone-a"), preferApart(10, zoneKey, r.group), preferApart(1, corev1.LabelHostname, r.group))
			}
		},
		check: func(t *testing.T, r *rowRun, pods []placed) {
			wantNodes(t, pods, 5)
			if got, want := countBy(pods, zoneKey), map[string]int{"test-zone-a": 2, "test-zone-b": 1, "test-zone-c": 1, "test-zone-d": 1}; !maps.Equal(got, want) {
				t.Errorf("pods per zone %v, want %v", got, want)
			}
		},
	}, {
		line:  2509,
		name:  "node affinity In [a, b] and In [b] allows only b",
		pools: []pool{anyCapacity("default")},
		setup: func(t *testing.T, r *rowRun) {
			r.pod(t, r.ns, "b-only", "500m", "256Mi", requireTerms(
				[]corev1.NodeSelectorRequirement{in(zoneKey, "test-zone-a", "test-zone-b"), in(zoneKey, "test-zone-b")}))
		},
		check: func(t *testing.T, r *rowRun, pods []placed) {
			wantNodes(t, pods, 1)
			wantLabel(t, pods[0].node, zoneKey, "test-zone-b")
		},
	}, {
		line:  2523,
		name:  "node affinity In [a, b] and NotIn [b] allows only a",
		pools: []pool{anyCapacity("default")},
		setup: func(t *testing.T, r *rowRun) {
			r.pod(t, r.ns, "a-only", "500m", "256Mi", requireTerms(
				[]corev1.NodeSelectorRequirement{in(zoneKey, "test-zone-a", "test-zone-b"), notIn(zoneKey, "test-zone-b")}))
		},
		check: func(t *testing.T, r *rowRun, pods []placed) {
			wantNodes(t, pods, 1)
			wantLabel(t, pods[0].node, zoneKey, "test-zone-a")
		},
	}, {
		line:  2532,
		name:  "node affinity OR-terms: the first term when zone a is available",
		pools: []pool{anyCapacity("default")},
		setup: func(t *testing.T, r *rowRun) { r.pod(t, r.ns, "first-term", "500m", "256Mi", orTerms()) },
		check: func(t *testing.T, r *rowRun, pods []placed) {
			wantNodes(t, pods, 1)
			wantLabel(t, pods[0].node, zoneKey, "test-zone-a")
		},
	}, {
		line:  2532,
		name:  "node affinity OR-terms: spot in zone d when zone a is not available",
		pools: []pool{anyCapacity("default", `{key: topology.kubernetes.io/zone, operator: In, values: [test-zone-b, test-zone-c, test-zone-d]}`)},
		setup: func(t *testing.T, r *rowRun) { r.pod(t, r.ns, "second-term", "500m", "256Mi", orTerms()) },
		check: func(t *testing.T, r *rowRun, pods []placed) {
			wantNodes(t, pods, 1)
			wantLabel(t, pods[0].node, zoneKey, "test-zone-d")
			wantLabel(t, pods[0].node, capacityTypeKey, "spot")
		},
	}, {
		line: 2576,
		name: "taints: only the pod tolerating the GPU NodePool's taint gets its nodes",
		pools: []pool{
			{suffix: "gpu", weight: 10, requirements: []string{
				`{key: karpenter.k8s.aws/instance-family, operator: In, values: [g5, g6]}`,
				`{key: kubernetes.io/os, operator: In, values: [linux]}`,
			}, taints: []string{`{key: nvidia.com/gpu, value: "true", effect: NoSchedule}`}},
			anyCapacity("general"),
		},
		setup: func(t *testing.T, r *rowRun) {
			r.pod(t, r.ns, "mygpupod", "1", "1Gi", func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Requests[gpuResource] = resource.MustParse("1")
				p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{gpuResource: resource.MustParse("1")}
				p.Spec.Tolerations = []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
			})
			r.pod(t, r.ns, "plain", "500m", "256Mi")
		},
		check: func(t *testing.T, r *rowRun, pods []placed) {
			wantNodes(t, pods, 2)
			for _, p := range pods {
				want := r.group + "-general"
				if p.pod.Name == "mygpupod" {
					want = r.group + "-gpu"
				}
				wantLabel(t, p.node, nodePoolKey, want)
			}
		},
	}, {
		line:  2612,
		name:  "ScheduleAnyway spreads over zone, hostname and capacity type are kept under Respect",
		pools: []pool{anyCapacity("default")},
		setup: func(t *testing.T, r *rowRun) {
			for i := range 4 {
				r.pod(t, r.ns, fmt.Sprintf("jjones-%d", i), "250m", "256Mi", labelled("dev", r.group),
					spread(zoneKey, corev1.ScheduleAnyway, r.group), spread(corev1.LabelHostname, corev1.ScheduleAnyway, r.group),
					spread(capacityTypeKey, corev1.ScheduleAnyway, r.group))
			}
		},
		check: func(t *testing.T, r *rowRun, pods []placed) {
			wantNodes(t, pods, 4)
			wantSkew(t, pods, zoneKey, 1)
			wantSkew(t, pods, capacityTypeKey, 1)
			if got := countBy(pods, zoneKey); len(got) != 4 {
				t.Errorf("pods per zone %v, want one in each of the four zones", got)
			}
			if got := countBy(pods, capacityTypeKey); len(got) != 2 {
				t.Errorf("pods per capacity type %v, want both", got)
			}
		},
	}, {
		line:  2635,
		name:  "a DoNotSchedule zone spread uses every zone",
		pools: []pool{anyCapacity("default")},
		setup: func(t *testing.T, r *rowRun) {
			for i := range 4 {
				r.pod(t, r.ns, fmt.Sprintf("zonal-%d", i), "250m", "256Mi", labelled("dev", r.group), spread(zoneKey, corev1.DoNotSchedule, r.group))
			}
		},
		check: func(t *testing.T, r *rowRun, pods []placed) {
			if got := countBy(pods, zoneKey); len(got) != 4 {
				t.Errorf("pods per zone %v, want one in each of the four zones", got)
			}
		},
	}, {
		line:  2635,
		name:  "a zone spread with nodeTaintsPolicy Honor uses every zone",
		pools: []pool{anyCapacity("default")},
		setup: func(t *testing.T, r *rowRun) {
			for i := range 4 {
				r.pod(t, r.ns, fmt.Sprintf("honor-%d", i), "250m", "256Mi", labelled("dev", r.group), spread(zoneKey, corev1.DoNotSchedule, r.group),
					func(p *corev1.Pod) {
						p.Spec.TopologySpreadConstraints[0].NodeTaintsPolicy = ptr.To(corev1.NodeInclusionPolicyHonor)
					})
			}
		},
		check: func(t *testing.T, r *rowRun, pods []placed) {
			if got := countBy(pods, zoneKey); len(got) != 4 {
				t.Errorf("pods per zone %v, want one in each of the four zones", got)
			}
		},
	}, {
		line:  2635,
		name:  "a zone spread with nodeAffinityPolicy Honor counts only the zones the pods allow",
		pools: []pool{anyCapacity("default")},
		setup: func(t *testing.T, r *rowRun) {
			for i := range 4 {
				r.pod(t, r.ns, fmt.Sprintf("ab-%d", i), "250m", "256Mi", labelled("dev", r.group), spread(zoneKey, corev1.DoNotSchedule, r.group),
					requireTerms([]corev1.NodeSelectorRequirement{in(zoneKey, "test-zone-a", "test-zone-b")}),
					func(p *corev1.Pod) {
						p.Spec.TopologySpreadConstraints[0].NodeAffinityPolicy = ptr.To(corev1.NodeInclusionPolicyHonor)
					})
			}
		},
		check: func(t *testing.T, r *rowRun, pods []placed) {
			if got, want := countBy(pods, zoneKey), map[string]int{"test-zone-a": 2, "test-zone-b": 2}; !maps.Equal(got, want) {
				t.Errorf("pods per zone %v, want %v", got, want)
			}
		},
	}, {
		line:  2635,
		name:  "a DoNotSchedule capacity-type spread uses spot and on-demand",
		pools: []pool{anyCapacity("default")},
		setup: func(t *testing.T, r *rowRun) {
			for i := range 2 {
				r.pod(t, r.ns, fmt.Sprintf("ct-%d", i), "250m", "256Mi", labelled("dev", r.group), spread(capacityTypeKey, corev1.DoNotSchedule, r.group))
			}
		},
		check: func(t *testing.T, r *rowRun, pods []placed) {
			if got, want := countBy(pods, capacityTypeKey), map[string]int{"spot": 1, "on-demand": 1}; !maps.Equal(got, want) {
				t.Errorf("pods per capacity type %v, want %v", got, want)
			}
		},
	}, {
		line:  2673,
		name:  "zone affinity to system=backend and hostname anti-affinity among app=inflate",
		pools: []pool{anyCapacity("default")},
		setup: func(t *testing.T, r *rowRun) {
			r.pod(t, r.ns, "backend", "250m", "256Mi", labelled("system", "backend"), func(p *corev1.Pod) { p.Spec.NodeSelector[zoneKey] = "test-zone-c" })
			for i := range 3 {
				r.pod(t, r.ns, fmt.Sprintf("inflate-%d", i), "250m", "256Mi", labelled("app", "inflate"),
					podAffinity(zoneKey, "system", "backend", nil, nil), podAntiAffinity(corev1.LabelHostname, "app", "inflate", nil))
			}
		},
		check: func(t *testing.T, r *rowRun, pods []placed) {
			inflate := withPrefix(pods, "inflate-")
			wantNodes(t, inflate, 3)
			if got := countBy(inflate, zoneKey); !maps.Equal(got, map[string]int{"test-zone-c": 3}) {
				t.Errorf("inflate pods per zone %v, want all three in test-zone-c with backend", got)
			}
		},
	}, {
		line:  2673,
		name:  "zone affinity to a pod of another namespace selected by its labels",
		pools: []pool{anyCapacity("default")},
		setup: func(t *testing.T, r *rowRun) {
			backendNS := r.namespace(t, "backend", map[string]string{"example.com/tier": r.group + "-backend"})
			r.pod(t, backendNS, "backend", "250m", "256Mi", labelled("system", "backend"), func(p *corev1.Pod) { p.Spec.NodeSelector[zoneKey] = "test-zone-b" })
			selector := &metav1.LabelSelector{MatchLabels: map[string]string{"example.com/tier": r.group + "-backend"}}
			for i := range 2 {
				r.pod(t, r.ns, fmt.Sprintf("frontend-%d", i), "250m", "256Mi", podAffinity(zoneKey, "system", "backend", nil, selector))
			}
		},
		check: func(t *testing.T, r *rowRun, pods []placed) {
			if got := countBy(pods, zoneKey); !maps.Equal(got, map[string]int{"test-zone-b": 3}) {
				t.Errorf("pods per zone %v, want all in test-zone-b with the backend", got)
			}
		},
	}, {
		line:  2673,
		name:  "hostname affinity to a pod of another namespace named by the term",
		pools: []pool{anyCapacity("default")},
		setup: func(t *testing.T, r *rowRun) {
			anchorNS := r.namespace(t, "anchor", nil)
			r.pod(t, anchorNS, "anchor", "1", "1Gi", labelled("app", "anchor"))
			r.pod(t, r.ns, "follower", "1", "1Gi", podAffinity(corev1.LabelHostname, "app", "anchor", []string{anchorNS}, nil))
		},
		check: func(t *testing.T, r *rowRun, pods []placed) { wantNodes(t, pods, 1) },
	}, {
		line:  2675,
		name:  "hostname anti-affinity to a pod of another namespace named by the term",
		pools: []pool{anyCapacity("default")},
		setup: func(t *testing.T, r *rowRun) {
			otherNS := r.namespace(t, "db", nil)
			r.pod(t, otherNS, "db", "250m", "256Mi", labelled("app", "db"))
			r.pod(t, r.ns, "cache", "250m", "256Mi", podAntiAffinity(corev1.LabelHostname, "app", "db", []string{otherNS}))
		},
		check: func(t *testing.T, r *rowRun, pods []placed) { wantNodes(t, pods, 2) },
	}, {
		line:  2685,
		name:  "a claim bound to a volume in zone b gets a node in zone b",
		pools: []pool{anyCapacity("default")},
		setup: func(t *testing.T, r *rowRun) {
			class := r.storageClass(t, zoneKey, nil)
			pv := r.volume(t, class, zoneKey, "test-zone-b")
			claim := r.claim(t, "data", class, pv)
			r.pod(t, r.ns, "app", "250m", "256Mi", mounting(claim))
		},
		check: func(t *testing.T, r *rowRun, pods []placed) {
			wantNodes(t, pods, 1)
			wantLabel(t, pods[0].node, zoneKey, "test-zone-b")
			wantClaimsBound(t, r.ns)
		},
	}, {
		line:  2683,
		name:  "a WaitForFirstConsumer claim goes to a zone its class allows where a volume is",
		pools: []pool{anyCapacity("default")},
		setup: func(t *testing.T, r *rowRun) {
			class := r.storageClass(t, zoneKey, []string{"test-zone-a", "test-zone-b"})
			r.volume(t, class, zoneKey, "test-zone-b")
			claim := r.claim(t, "ebs-claim", class, "")
			r.pod(t, r.ns, "app", "250m", "256Mi", mounting(claim))
		},
		check: func(t *testing.T, r *rowRun, pods []placed) {
			wantNodes(t, pods, 1)
			wantLabel(t, pods[0].node, zoneKey, "test-zone-b")
			wantClaimsBound(t, r.ns)
		},
	}, {
		line:  2725,
		name:  "a class and volume zoned by the EBS CSI driver's key get a node in that zone",
		pools: []pool{anyCapacity("default")},
		setup: func(t *testing.T, r *rowRun) {
			class := r.storageClass(t, ebsZoneKey, []string{"test-zone-a", "test-zone-c"})
			r.volume(t, class, ebsZoneKey, "test-zone-c")
			claim := r.claim(t, "ebs-claim", class, "")
			r.pod(t, r.ns, "app", "250m", "256Mi", mounting(claim))
		},
		check: func(t *testing.T, r *rowRun, pods []placed) {
			wantNodes(t, pods, 1)
			wantLabel(t, pods[0].node, zoneKey, "test-zone-c")
			wantClaimsBound(t, r.ns)
		},
	}, {
		line:  2683,
		name:  "a StatefulSet's claim templates over a WaitForFirstConsumer class follow their volumes",
		pools: []pool{anyCapacity("default")},
		setup: func(t *testing.T, r *rowRun) {
			class := r.storageClass(t, zoneKey, nil)
			r.volume(t, class, zoneKey, "test-zone-c")
			r.volume(t, class, zoneKey, "test-zone-d")
			r.statefulSet(t, "db", class, 2)
		},
		check: func(t *testing.T, r *rowRun, pods []placed) {
			wantNodes(t, pods, 2)
			if got, want := countBy(pods, zoneKey), map[string]int{"test-zone-c": 1, "test-zone-d": 1}; !maps.Equal(got, want) {
				t.Errorf("pods per zone %v, want %v (the volumes' zones)", got, want)
			}
			wantClaimsBound(t, r.ns)
		},
	}, {
		line: 2739,
		name: "the heavier NodePool first, within its limits",
		pools: []pool{
			{suffix: "reserved", weight: 50, cpuLimit: "2", requirements: []string{`{key: node.kubernetes.io/instance-type, operator: In, values: [c5.large]}`}},
			anyCapacity("default"),
		},
		setup: func(t *testing.T, r *rowRun) {
			for i := range 3 {
				r.pod(t, r.ns, fmt.Sprintf("w-%d", i), "1", "1Gi")
			}
		},
		check: func(t *testing.T, r *rowRun, pods []placed) {
			got := countBy(pods, nodePoolKey)
			if want := map[string]int{r.group + "-reserved": 1, r.group + "-default": 2}; !maps.Equal(got, want) {
				t.Errorf("pods per NodePool %v, want %v (the reserved one holds one c5.large within its 2-cpu limit)", got, want)
			}
		},
	}, {
		line: 2775,
		name: "a heavier amd64 NodePool is the default; arm64 pods get the arm64 one",
		pools: []pool{
			func() pool { p := anyCapacity("default"); p.weight = 50; return p }(),
			{suffix: "arm64", requirements: []string{
				`{key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}`,
				`{key: kubernetes.io/arch, operator: In, values: [arm64]}`,
				`{key: node.kubernetes.io/instance-type, operator: In, values: [m6g.large, m6g.xlarge]}`,
			}},
		},
		setup: func(t *testing.T, r *rowRun) {
			r.pod(t, r.ns, "anywhere", "500m", "256Mi")
			r.pod(t, r.ns, "arm", "500m", "256Mi", func(p *corev1.Pod) { p.Spec.NodeSelector[corev1.LabelArchStable] = "arm64" })
		},
		check: func(t *testing.T, r *rowRun, pods []placed) {
			for _, p := range pods {
				want := r.group + "-default"
				if p.pod.Name == "arm" {
					want = r.group + "-arm64"
				}
				wantLabel(t, p.node, nodePoolKey, want)
			}
		},
	}, {
		line:  2353,
		name:  "an AMD GPU limit gets a node with AMD GPUs",
		pools: []pool{anyCapacity("default")},
		setup: func(t *testing.T, r *rowRun) {
			r.pod(t, r.ns, "radeon", "1", "1Gi", limit(amdGPUResource, "1"))
		},
		check: func(t *testing.T, r *rowRun, pods []placed) {
			wantNodes(t, pods, 1)
			wantLabel(t, pods[0].node, familyKey, "g4ad")
			wantAllocatable(t, pods[0].node, amdGPUResource, 1)
		},
	}, {
		line:  2354,
		name:  "a Neuron device limit gets the cheapest type with a Neuron device",
		pools: []pool{anyCapacity("default")},
		setup: func(t *testing.T, r *rowRun) {
			r.pod(t, r.ns, "inferentia", "1", "1Gi", limit(neuronResource, "1"))
		},
		check: func(t *testing.T, r *rowRun, pods []placed) {
			wantNodes(t, pods, 1)
			wantLabel(t, pods[0].node, instanceTypeKey, "inf2.xlarge")
			wantAllocatable(t, pods[0].node, neuronResource, 1)
		},
	}, {
		line:  2355,
		name:  "a limit of four NeuronCores gets a type with at least four",
		pools: []pool{anyCapacity("default")},
		setup: func(t *testing.T, r *rowRun) {
			r.pod(t, r.ns, "cores", "1", "1Gi", limit(neuronCoreResource, "4"))
		},
		check: func(t *testing.T, r *rowRun, pods []placed) {
			wantNodes(t, pods, 1)
			// inf2.xlarge, inf2.8xlarge and trn1.2xlarge have two cores; inf2.24xlarge is the
			// cheapest with more.
			wantLabel(t, pods[0].node, instanceTypeKey, "inf2.24xlarge")
			wantAllocatable(t, pods[0].node, neuronCoreResource, 4)
		},
	}, {
		line:  2409,
		name:  "a pod ENI limit gets a Nitro type with branch interfaces, not a burstable one",
		pools: []pool{anyCapacity("default")},
		setup: func(t *testing.T, r *rowRun) {
			r.pod(t, r.ns, "sg-pod", "250m", "256Mi", limit(podENIResource, "1"))
		},
		check: func(t *testing.T, r *rowRun, pods []placed) {
			wantNodes(t, pods, 1)
			wantAllocatable(t, pods[0].node, podENIResource, 1)
			if category := pods[0].node.Labels[categoryKey]; category == "t" {
				t.Errorf("node %s is burstable (%s), which has no branch interfaces", pods[0].node.Name, pods[0].node.Labels[instanceTypeKey])
			}
		},
	}, {
		// The NodePools page (seed line 1755): "Karpenter supports linux and windows operating
		// systems"; kubernetes.io/os is a well-known label of the Scheduling page.
		line: 2435,
		name: "a windows node selector gets a windows node from a NodePool allowing both",
		pools: []pool{{suffix: "default", requirements: []string{
			`{key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}`,
			`{key: kubernetes.io/os, operator: In, values: [linux, windows]}`,
		}}},
		setup: func(t *testing.T, r *rowRun) {
			r.pod(t, r.ns, "win", "500m", "256Mi", func(p *corev1.Pod) { p.Spec.NodeSelector[corev1.LabelOSStable] = "windows" })
		},
		check: func(t *testing.T, r *rowRun, pods []placed) {
			wantNodes(t, pods, 1)
			wantLabel(t, pods[0].node, corev1.LabelOSStable, "windows")
			// Windows is offered on amd64 types only.
			wantLabel(t, pods[0].node, corev1.LabelArchStable, "amd64")
		},
	}, {
		line:  2831,
		name:  "requiring local NVMe to exist gets a type with instance storage",
		pools: []pool{anyCapacity("default")},
		setup: func(t *testing.T, r *rowRun) {
			r.pod(t, r.ns, "nvme", "500m", "256Mi", requireTerms([]corev1.NodeSelectorRequirement{exists(nvmeKey)}))
		},
		check: func(t *testing.T, r *rowRun, pods []placed) {
			wantNodes(t, pods, 1)
			wantLabelOver(t, pods[0].node, nvmeKey, 0)
			wantLabel(t, pods[0].node, familyKey, "i4i")
		},
	}, {
		line:  2851,
		name:  "a pod requiring over 99 GB of local NVMe gets it",
		pools: []pool{anyCapacity("default")},
		setup: func(t *testing.T, r *rowRun) {
			r.pod(t, r.ns, "nvme", "500m", "256Mi", requireTerms([]corev1.NodeSelectorRequirement{gt(nvmeKey, "99")}))
		},
		check: func(t *testing.T, r *rowRun, pods []placed) {
			wantNodes(t, pods, 1)
			wantLabelOver(t, pods[0].node, nvmeKey, 99)
		},
	}, {
		line:  2860,
		name:  "a NodePool requiring over 99 GB of local NVMe gives it to every pod",
		pools: []pool{anyCapacity("default", `{key: karpenter.k8s.aws/instance-local-nvme, operator: Gt, values: ["99"]}`)},
		setup: func(t *testing.T, r *rowRun) { r.pod(t, r.ns, "plain", "500m", "256Mi") },
		check: func(t *testing.T, r *rowRun, pods []placed) {
			wantNodes(t, pods, 1)
			wantLabelOver(t, pods[0].node, nvmeKey, 99)
		},
	}, {
		line:  2879,
		name:  "a pod requiring over 49999 megabits of network bandwidth gets it",
		pools: []pool{anyCapacity("default")},
		setup: func(t *testing.T, r *rowRun) {
			r.pod(t, r.ns, "fast", "500m", "256Mi", requireTerms([]corev1.NodeSelectorRequirement{gt(bandwidthKey, "49999")}))
		},
		check: func(t *testing.T, r *rowRun, pods []placed) {
			wantNodes(t, pods, 1)
			wantLabelOver(t, pods[0].node, bandwidthKey, 49999)
		},
	}, {
		line:  2888,
		name:  "a NodePool requiring over 49999 megabits of network bandwidth gives it to every pod",
		pools: []pool{anyCapacity("default", `{key: karpenter.k8s.aws/instance-network-bandwidth, operator: Gt, values: ["49999"]}`)},
		setup: func(t *testing.T, r *rowRun) { r.pod(t, r.ns, "plain", "500m", "256Mi") },
		check: func(t *testing.T, r *rowRun, pods []placed) {
			wantNodes(t, pods, 1)
			wantLabelOver(t, pods[0].node, bandwidthKey, 49999)
		},
	}, {
		line:  2911,
		name:  "an Exists NodePool requirement isolates each team on its own nodes",
		pools: []pool{anyCapacity("default", `{key: company.com/team, operator: Exists}`)},
		setup: func(t *testing.T, r *rowRun) {
			for _, team := range []string{"team-a", "team-b"} {
				for i := range 2 {
					r.pod(t, r.ns, fmt.Sprintf("%s-%d", team, i), "250m", "256Mi", labelled("team", team),
						func(p *corev1.Pod) { p.Spec.NodeSelector[teamKey] = team })
				}
			}
		},
		check: func(t *testing.T, r *rowRun, pods []placed) {
			wantNodes(t, pods, 2)
			for _, p := range pods {
				wantLabel(t, p.node, teamKey, p.pod.Labels["team"])
			}
		},
	}, {
		line:  2961,
		name:  "a pod not selecting the Exists label still gets a node with a value for it",
		pools: []pool{anyCapacity("default", `{key: company.com/team, operator: Exists}`)},
		setup: func(t *testing.T, r *rowRun) { r.pod(t, r.ns, "teamless", "250m", "256Mi") },
		check: func(t *testing.T, r *rowRun, pods []placed) {
			wantNodes(t, pods, 1)
			if pods[0].node.Labels[teamKey] == "" {
				t.Errorf("node %s has no %s value; Karpenter generates one", pods[0].node.Name, teamKey)
			}
		},
	}, {
		line: 2967,
		name: "a spread over capacity-spread values splits spot and on-demand 4 to 1",
		pools: []pool{
			{suffix: "spot", requirements: []string{
				`{key: karpenter.sh/capacity-type, operator: In, values: [spot]}`,
				`{key: capacity-spread, operator: In, values: ["2", "3", "4", "5"]}`,
			}},
			{suffix: "on-demand", requirements: []string{
				`{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}`,
				`{key: capacity-spread, operator: In, values: ["1"]}`,
			}},
		},
		setup: func(t *testing.T, r *rowRun) {
			for i := range 5 {
				r.pod(t, r.ns, fmt.Sprintf("split-%d", i), "250m", "256Mi", labelled("dev", r.group), spread(spreadKey, corev1.DoNotSchedule, r.group))
			}
		},
		check: func(t *testing.T, r *rowRun, pods []placed) {
			wantNodes(t, pods, 5)
			if got, want := countBy(pods, spreadKey), map[string]int{"1": 1, "2": 1, "3": 1, "4": 1, "5": 1}; !maps.Equal(got, want) {
				t.Errorf("pods per %s %v, want %v", spreadKey, got, want)
			}
			if got, want := countBy(pods, capacityTypeKey), map[string]int{"spot": 4, "on-demand": 1}; !maps.Equal(got, want) {
				t.Errorf("pods per capacity type %v, want %v", got, want)
			}
		},
	}}
}

// createPool creates p for group, with its KWOKNodeClass.
func createPool(t *testing.T, group string, p pool) {
	t.Helper()
	name := group + "-" + p.suffix
	env.CreateKWOKNodeClass(t, name)
	var spec, template strings.Builder
	// Placement is under test: consolidation must not move the pods placed; empty nodes may go.
	spec.WriteString("  disruption: {consolidationPolicy: WhenEmpty}\n")
	if p.weight > 0 {
		fmt.Fprintf(&spec, "  weight: %d\n", p.weight)
	}
	if p.cpuLimit != "" {
		fmt.Fprintf(&spec, "  limits: {cpu: %q}\n", p.cpuLimit)
	}
	if len(p.taints) > 0 {
		fmt.Fprintf(&template, "      taints: [%s]\n", strings.Join(p.taints, ", "))
	}
	if len(p.requirements) > 0 {
		fmt.Fprintf(&template, "      requirements: [%s]\n", strings.Join(p.requirements, ", "))
	}
	env.Create(t, framework.NodePools, fmt.Sprintf(`
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: %[1]q}
spec:
%[3]s  template:
    metadata:
      labels: {%[4]s: %[2]q}
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: %[1]q}
%[5]s`, name, group, spec.String(), framework.GroupLabel, template.String()))
}

// pod creates a pod of the row in ns that must run: the group's pod spec (a node selector on
// the group label), changed by opts.
func (r *rowRun) pod(t *testing.T, ns, name, cpu, memory string, opts ...func(*corev1.Pod)) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{framework.GroupLabel: r.group}},
		Spec:       framework.GroupPodSpec(r.group, cpu, memory),
	}
	for _, opt := range opts {
		opt(pod)
	}
	if _, err := env.Client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s/%s: %v", ns, name, err)
	}
	r.want[ns]++
}

// namespace creates another namespace for the row, named after the row's with suffix (so it
// sorts after it: the solver meets the row's own pods first), labelled, and deletes it when
// the row ends.
func (r *rowRun) namespace(t *testing.T, suffix string, labels map[string]string) string {
	t.Helper()
	name := r.ns + "-" + suffix
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"joinery.dev/e2e": "true"}}}
	maps.Copy(ns.Labels, labels)
	if _, err := env.Client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() { deleteClusterScoped(t, "namespace", name, env.Client.CoreV1().Namespaces().Delete) })
	return name
}

// storageClass creates a WaitForFirstConsumer class without a provisioner (volumes are
// created for it, as for local volumes), allowing zones (by the zone label key) when given.
func (r *rowRun) storageClass(t *testing.T, key string, zones []string) string {
	t.Helper()
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: r.group},
		Provisioner:       "kubernetes.io/no-provisioner",
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
	}
	if len(zones) > 0 {
		sc.AllowedTopologies = []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: key, Values: zones}}}}
	}
	if _, err := env.Client.StorageV1().StorageClasses().Create(t.Context(), sc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create storage class: %v", err)
	}
	t.Cleanup(func() {
		deleteClusterScoped(t, "storage class", sc.Name, env.Client.StorageV1().StorageClasses().Delete)
	})
	return sc.Name
}

// volume creates a 1Gi local PersistentVolume of class whose node affinity pins it to zone (by
// the zone label key), and returns its name.
func (r *rowRun) volume(t *testing.T, class, key, zone string) string {
	t.Helper()
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: framework.UniqueName(r.group)},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName:              class,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/" + r.group}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{in(key, zone)},
			}}}},
		},
	}
	if _, err := env.Client.CoreV1().PersistentVolumes().Create(t.Context(), pv, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create volume: %v", err)
	}
	t.Cleanup(func() { deleteClusterScoped(t, "volume", pv.Name, env.Client.CoreV1().PersistentVolumes().Delete) })
	return pv.Name
}

// claim creates a 1Gi claim of class in the row's namespace, bound to volume when given
// (the binder completes the binding).
func (r *rowRun) claim(t *testing.T, name, class, volume string) string {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &class,
			VolumeName:       volume,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := env.Client.CoreV1().PersistentVolumeClaims(r.ns).Create(t.Context(), pvc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create claim: %v", err)
	}
	return name
}

// statefulSet creates a StatefulSet of the group with a 1Gi claim template of class per
// replica.
func (r *rowRun) statefulSet(t *testing.T, name, class string, replicas int32) {
	t.Helper()
	labels := map[string]string{framework.GroupLabel: r.group, "app": name}
	spec := framework.GroupPodSpec(r.group, "250m", "256Mi")
	spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            &replicas,
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Template:            corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: &class,
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
		},
	}
	if _, err := env.Client.AppsV1().StatefulSets(r.ns).Create(t.Context(), sts, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create statefulset: %v", err)
	}
	r.want[r.ns] += int(replicas)
}

func deleteClusterScoped(t *testing.T, what, name string, del func(context.Context, string, metav1.DeleteOptions) error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := del(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete %s %s: %v", what, name, err)
	}
}

// slug keeps the letters and digits of name, lowercased, with one dash for each run of
// anything else: the framework names a row's namespace after its test.
func slug(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.Trim(b.String(), "-")
}

// Pod options.

func labelled(key, value string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Labels[key] = value }
}

func in(key string, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

func notIn(key string, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpNotIn, Values: values}
}

func exists(key string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpExists}
}

func gt(key, value string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpGt, Values: []string{value}}
}

// limit sets a limit on the extended resource name (its request defaults to it), as the seed's
// accelerator and pod ENI examples do.
func limit(name corev1.ResourceName, quantity string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{name: resource.MustParse(quantity)}
	}
}

func affinity(p *corev1.Pod) *corev1.Affinity {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &corev1.Affinity{}
	}
	return p.Spec.Affinity
}

// requireTerms sets required node affinity, one term per list, ORed.
func requireTerms(terms ...[]corev1.NodeSelectorRequirement) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		selector := &corev1.NodeSelector{}
		for _, exprs := range terms {
			selector.NodeSelectorTerms = append(selector.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: exprs})
		}
		affinity(p).NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: selector}
	}
}

// orTerms is the seed's OR example: zone a (In [a, b], NotIn [b]), or spot in zone d.
func orTerms() func(*corev1.Pod) {
	return requireTerms(
		[]corev1.NodeSelectorRequirement{in(zoneKey, "test-zone-a", "test-zone-b"), notIn(zoneKey, "test-zone-b")},
		[]corev1.NodeSelectorRequirement{in(capacityTypeKey, "spot"), in(zoneKey, "test-zone-d")},
	)
}

func spread(key string, when corev1.UnsatisfiableConstraintAction, dev string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
			MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: when,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"dev": dev}},
		})
	}
}

func podAffinity(key, label, value string, namespaces []string, namespaceSelector *metav1.LabelSelector) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		affinity(p).PodAffinity = &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{label: value}},
			Namespaces: namespaces, NamespaceSelector: namespaceSelector,
		}}}
	}
}

func podAntiAffinity(key, label, value string, namespaces []string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		affinity(p).PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{label: value}}, Namespaces: namespaces,
		}}}
	}
}

func preferNode(weight int32, key string, values ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		a := affinity(p)
		if a.NodeAffinity == nil {
			a.NodeAffinity = &corev1.NodeAffinity{}
		}
		a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
			corev1.PreferredSchedulingTerm{Weight: weight, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{in(key, values...)}}})
	}
}

// preferApart prefers, with weight, a domain of key without another pod labelled app=app.
func preferApart(weight int32, key, app string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		a := affinity(p)
		if a.PodAntiAffinity == nil {
			a.PodAntiAffinity = &corev1.PodAntiAffinity{}
		}
		a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
			corev1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: corev1.PodAffinityTerm{
				TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			}})
	}
}

func mounting(claim string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
		}})
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	}
}

// Checks.

func running(pod corev1.Pod) error {
	if pod.Status.Phase != corev1.PodRunning || pod.Spec.NodeName == "" {
		return fmt.Errorf("phase %q on node %q", pod.Status.Phase, pod.Spec.NodeName)
	}
	return nil
}

func wantNodes(t *testing.T, pods []placed, n int) {
	t.Helper()
	nodes := map[string]bool{}
	for _, p := range pods {
		nodes[p.node.Name] = true
	}
	if len(nodes) != n {
		t.Errorf("pods run on %d nodes %v, want %d", len(nodes), slices.Sorted(maps.Keys(nodes)), n)
	}
}

func wantLabel(t *testing.T, node *corev1.Node, key, value string) {
	t.Helper()
	if got := node.Labels[key]; got != value {
		t.Errorf("node %s has %s=%q, want %q", node.Name, key, got, value)
	}
}

// wantLabelOver: node has an integer label key above min.
func wantLabelOver(t *testing.T, node *corev1.Node, key string, min int64) {
	t.Helper()
	value, ok := node.Labels[key]
	n, err := strconv.ParseInt(value, 10, 64)
	if !ok || err != nil || n <= min {
		t.Errorf("node %s has %s=%q, want an integer over %d", node.Name, key, value, min)
	}
}

// wantAllocatable: node allocates at least n of the resource name.
func wantAllocatable(t *testing.T, node *corev1.Node, name corev1.ResourceName, n int64) {
	t.Helper()
	if q := node.Status.Allocatable[name]; q.Value() < n {
		t.Errorf("node %s (%s) allocates %s %s, want at least %d", node.Name, node.Labels[instanceTypeKey], q.String(), name, n)
	}
}

// countBy counts pods by their node's label key.
func countBy(pods []placed, key string) map[string]int {
	out := map[string]int{}
	for _, p := range pods {
		out[p.node.Labels[key]]++
	}
	return out
}

func wantSkew(t *testing.T, pods []placed, key string, maxSkew int) {
	t.Helper()
	counts := slices.Collect(maps.Values(countBy(pods, key)))
	if len(counts) > 0 && slices.Max(counts)-slices.Min(counts) > maxSkew {
		t.Errorf("pods per %s %v: skew over %d", key, countBy(pods, key), maxSkew)
	}
}

func withPrefix(pods []placed, prefix string) []placed {
	var out []placed
	for _, p := range pods {
		if strings.HasPrefix(p.pod.Name, prefix) {
			out = append(out, p)
		}
	}
	return out
}

// nodeClaimOf returns the NodeClaim node was launched for (the kwok provider names a node after
// its NodeClaim).
func nodeClaimOf(t *testing.T, node *corev1.Node) *karpv1.NodeClaim {
	t.Helper()
	obj, err := env.Dynamic.Resource(framework.NodeClaims).Get(t.Context(), node.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get NodeClaim %s: %v", node.Name, err)
	}
	var nc karpv1.NodeClaim
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &nc); err != nil {
		t.Fatalf("decode NodeClaim %s: %v", node.Name, err)
	}
	return &nc
}

// checkNoEmptyNodeClaims: every NodeClaim of the row's NodePools hosts a pod of the row (no
// capacity bought twice or for nothing).
func checkNoEmptyNodeClaims(t *testing.T, r *rowRun, pods []placed) {
	t.Helper()
	list, err := env.Dynamic.Resource(framework.NodeClaims).List(t.Context(), metav1.ListOptions{LabelSelector: framework.GroupLabel + "=" + r.group})
	if err != nil {
		t.Fatalf("list NodeClaims: %v", err)
	}
	used := map[string]bool{}
	for _, p := range pods {
		used[p.node.Name] = true
	}
	for _, nc := range list.Items {
		if !used[nc.GetName()] {
			t.Errorf("NodeClaim %s hosts no pod of the row", nc.GetName())
		}
	}
}

func wantClaimsBound(t *testing.T, ns string) {
	t.Helper()
	framework.Eventually(t, time.Minute, "claims of "+ns+" Bound", func(ctx context.Context) (bool, error) {
		list, err := env.Client.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, pvc := range list.Items {
			if pvc.Status.Phase != corev1.ClaimBound {
				return false, fmt.Errorf("claim %s is %s", pvc.Name, pvc.Status.Phase)
			}
		}
		return len(list.Items) > 0, nil
	})
}
