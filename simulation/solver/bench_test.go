package solver

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/internal/testcatalog"
	"github.com/joinery-dev/joinery/internal/testpods"
	"github.com/joinery-dev/joinery/scheduling"
	"github.com/joinery-dev/joinery/simulation"
)

var benchLarge = flag.Bool("solver.large", false, "also run BenchmarkProvisioning at N = 10000 and 20000")

// benchPods is the workload: n pods in five equal groups (plain, zone spread, hostname
// spread, required zone pod affinity, required hostname anti-affinity on app=nginx), sizes
// drawn with a fixed seed.
func benchPods(n int) []*corev1.Pod {
	rng := rand.New(rand.NewPCG(1, 2))
	cpus := []string{"100m", "250m", "500m", "1", "1.5"}
	memories := []string{"100Mi", "256Mi", "512Mi", "1024Mi", "2048Mi", "4096Mi"}
	groups := []struct {
		app  string
		opts []podOption
	}{
		{"plain", nil},
		{"zone-spread", []podOption{testpods.Spread(corev1.LabelTopologyZone, "zone-spread", corev1.DoNotSchedule)}},
		{"host-spread", []podOption{testpods.Spread(corev1.LabelHostname, "host-spread", corev1.DoNotSchedule)}},
		{"zone-affinity", []podOption{affine(corev1.LabelTopologyZone, "zone-affinity")}},
		{"nginx", []podOption{testpods.AntiAffine(corev1.LabelHostname, "nginx")}},
	}
	out := make([]*corev1.Pod, 0, n)
	for i := range n {
		g := groups[i%len(groups)]
		opts := append([]podOption{labelled("app", g.app)}, g.opts...)
		out = append(out, testPod(fmt.Sprintf("%s-%d", g.app, i), cpus[rng.IntN(len(cpus))], memories[rng.IntN(len(memories))], opts...))
	}
	return out
}

func BenchmarkProvisioning(b *testing.B) {
	sizes := []int{100, 1000, 5000}
	if *benchLarge {
		sizes = append(sizes, 10000, 20000)
	}
	its := testcatalog.Bench()
	for _, n := range sizes {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			runBench(b, its, benchPods(n), PreferenceRespect)
		})
	}
}

// diversePods is the shape of Karpenter's own scheduling benchmark, for a comparison on the
// input Karpenter measures itself on: n pods in six equal kinds (the remainder plain):
// plain; zone spread and hostname spread whose pods carry a random label value and select
// another random one; required hostname and zone pod affinity, likewise; required hostname
// anti-affinity among app=nginx. Label values come from seven, sizes as benchPods', all from a
// fixed seed. Unlike benchPods, the random selectors split the batch into thousands of
// equivalence classes that share a few dozen spread and affinity constraints.
func diversePods(n int) []*corev1.Pod {
	rng := rand.New(rand.NewPCG(3, 4))
	cpus := []string{"100m", "250m", "500m", "1", "1.5"}
	memories := []string{"100Mi", "256Mi", "512Mi", "1024Mi", "2048Mi", "4096Mi"}
	values := []string{"a", "b", "c", "d", "e", "f", "g"}
	value := func() string { return values[rng.IntN(len(values))] }
	selector := func(key string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{key: value()}}
	}
	spread := func(topology string) podOption {
		sel := selector("spread-label")
		return func(p *corev1.Pod) {
			p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
				MaxSkew: 1, TopologyKey: topology, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel,
			})
		}
	}
	affinity := func(topology string) podOption {
		sel := selector("affinity-label")
		return func(p *corev1.Pod) {
			a := testpods.Affinity(p)
			if a.PodAffinity == nil {
				a.PodAffinity = &corev1.PodAffinity{}
			}
			a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution,
				corev1.PodAffinityTerm{TopologyKey: topology, LabelSelector: sel})
		}
	}
	kinds := []func() []podOption{
		func() []podOption { return []podOption{labelled("spread-label", value())} },
		func() []podOption {
			return []podOption{labelled("spread-label", value()), spread(corev1.LabelTopologyZone)}
		},
		func() []podOption {
			return []podOption{labelled("spread-label", value()), spread(corev1.LabelHostname)}
		},
		func() []podOption {
			return []podOption{labelled("affinity-label", value()), affinity(corev1.LabelHostname)}
		},
		func() []podOption {
			return []podOption{labelled("affinity-label", value()), affinity(corev1.LabelTopologyZone)}
		},
		func() []podOption {
			return []podOption{labelled("app", "nginx"), testpods.AntiAffine(corev1.LabelHostname, "nginx")}
		},
	}
	out := make([]*corev1.Pod, 0, n)
	per := n / len(kinds)
	for i := range n {
		kind := kinds[0]
		if i < per*len(kinds) {
			kind = kinds[i/per]
		}
		opts := kind()
		out = append(out, testPod(fmt.Sprintf("diverse-%d", i), cpus[rng.IntN(len(cpus))], memories[rng.IntN(len(memories))], opts...))
	}
	return out
}

// BenchmarkDiverse plans Karpenter's benchmark workload (diversePods) over the same catalog
// as BenchmarkProvisioning. Some hostname-affinity pods select labels whose pods have filled
// their nodes, and no new node can hold them; they are reported, not failed, as Karpenter's
// benchmark reports the pods it scheduled.
func BenchmarkDiverse(b *testing.B) {
	sizes := []int{1000, 5000}
	if *benchLarge {
		sizes = append(sizes, 20000)
	}
	its := testcatalog.Bench()
	for _, n := range sizes {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			state := &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default")}}
			s := newTestSolverWith(b, state, its, nil, withPolicy(PreferenceRespect))
			timePlans(b, s, its, diversePods(n), true)
		})
	}
}

// BenchmarkPreferences: 4000 identical pods (100m, 4Gi) preferring zone affinity, an
// unsatisfiable zone anti-affinity and hostname anti-affinity, under each policy.
func BenchmarkPreferences(b *testing.B) {
	its := testcatalog.Bench()
	batch := pods(4000, "pref", "100m", "4Gi", labelled("app", "pref"),
		preferAffine(50, corev1.LabelTopologyZone, "pref"),
		testpods.PreferAntiAffine(30, corev1.LabelTopologyZone, "pref"),
		testpods.PreferAntiAffine(10, corev1.LabelHostname, "pref"))
	for _, policy := range []PreferencePolicy{PreferenceRespect, PreferenceIgnore} {
		b.Run(string(policy), func(b *testing.B) { runBench(b, its, batch, policy) })
	}
}

// devicePods is the workload of BenchmarkDevicesAndVolumes: n pods in five equal groups,
// round-robin: a ResourceClaim of one NVIDIA GPU (a10g, l4 or t4g in turn, each pod its own
// claim); two WaitForFirstConsumer EBS CSI claims (a StorageClass of ebs.csi.aws.com); both;
// and two groups without either. Sizes as benchPods'. It returns the pods and the objects the
// Filters read (DeviceClass, ResourceClaims, StorageClass, PersistentVolumeClaims).
func devicePods(n int) ([]*corev1.Pod, []runtime.Object) {
	rng := rand.New(rand.NewPCG(1, 2))
	cpus := []string{"100m", "250m", "500m", "1", "1.5"}
	memories := []string{"100Mi", "256Mi", "512Mi", "1024Mi", "2048Mi", "4096Mi"}
	models := []string{"a10g", "l4", "t4g"}
	objects := []runtime.Object{&resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: cloudprovider.NVIDIAGPUDriver},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "gpu.nvidia.com"`},
		}}},
	}}
	var withVolumes []*corev1.Pod
	out := make([]*corev1.Pod, 0, n)
	for i := range n {
		group := []string{"gpu", "ebs", "gpu-ebs", "plain", "plain"}[i%5]
		p := testPod(fmt.Sprintf("%s-%d", group, i), cpus[rng.IntN(len(cpus))], memories[rng.IntN(len(memories))], labelled("app", group))
		if strings.HasPrefix(group, "gpu") {
			claim := gpuClaim(p.Name, models[(i/5)%len(models)], 1)
			objects = append(objects, claim)
			claiming(claim.Name)(p)
		}
		if strings.HasSuffix(group, "ebs") {
			withVolumes = append(withVolumes, p)
		}
		out = append(out, p)
	}
	return out, append(objects, ebsClaims(withVolumes, 2)...)
}

// BenchmarkDevicesAndVolumes plans pods with DRA claims and EBS volumes over the kwok catalog
// (232 EC2-like types, 24 with GPUs, every one with an EBS attach limit).
func BenchmarkDevicesAndVolumes(b *testing.B) {
	its := cloudprovider.InstanceTypes(kwokTypes(b))
	for _, n := range []int{100, 500} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			batch, objects := devicePods(n)
			runBenchWith(b, its, objects, batch, PreferenceRespect)
		})
	}
}

func runBench(b *testing.B, its cloudprovider.InstanceTypes, batch []*corev1.Pod, policy PreferencePolicy) {
	runBenchWith(b, its, nil, batch, policy)
}

// runBenchWith plans batch with objects in the clientset the Filters read, once untimed
// until DynamicResources has seen the claims (planWithClaims), then timed.
func runBenchWith(b *testing.B, its cloudprovider.InstanceTypes, objects []runtime.Object, batch []*corev1.Pod, policy PreferencePolicy) {
	state := &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default")}}
	s := newTestSolverWith(b, state, its, objects, withPolicy(policy))
	if len(objects) > 0 {
		planWithClaims(b, s, batch)
	}
	timePlans(b, s, its, batch, false)
}

// timePlans times s.Plan of batch. Unless unschedulable is allowed (reported as a metric
// then), every pod must be planned.
func timePlans(b *testing.B, s *testSolver, its cloudprovider.InstanceTypes, batch []*corev1.Pod, unschedulable bool) {
	var plan *simulation.Plan
	var elapsed, cpu time.Duration
	for b.Loop() {
		start, startCPU := time.Now(), processCPU(b)
		var err error
		if plan, err = s.Plan(b.Context(), batch); err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(start)
		cpu += processCPU(b) - startCPU
	}
	if len(plan.Unschedulable) > 0 && !unschedulable {
		b.Fatalf("%d pods unschedulable, e.g. %v", len(plan.Unschedulable), first(plan.Unschedulable))
	}
	price := 0.0
	for _, c := range plan.NewNodeClaims {
		reqs := scheduling.FromNodeSelectorRequirementsWithMinValues(c.NodeClaim.Spec.Requirements...)
		price += its.Compatible(reqs).OrderByPrice(reqs)[0].CheapestPrice(reqs)
	}
	b.ReportMetric(float64(len(batch))*float64(b.N)/elapsed.Seconds(), "pods/s")
	// CPU time (user and system, garbage collection included) compares runs on a shared,
	// loaded machine, where the wall clock depends on the other processes.
	b.ReportMetric(float64(len(batch))*float64(b.N)/cpu.Seconds(), "pods/cpu-s")
	b.ReportMetric(float64(len(plan.NewNodeClaims)), "nodes")
	b.ReportMetric(price, "price/h")
	if unschedulable {
		b.ReportMetric(float64(len(plan.Unschedulable)), "unschedulable")
	}
	// The plan's digest (with -v), to check that a change of speed left the plans as they were.
	b.Logf("plan sha256 %x", sha256.Sum256([]byte(planSummary(plan))))
}

// processCPU is the CPU time the process used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("reading the CPU time: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func first[K comparable, V any](m map[K]V) V {
	for _, v := range m {
		return v
	}
	var zero V
	return zero
}
