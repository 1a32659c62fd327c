package disruption

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/internal/testcatalog"
	"github.com/joinery-dev/joinery/internal/testpods"
)

var (
	benchConsolidationLarge = flag.Bool("consolidation.large", false, "also run BenchmarkConsolidation at 2000 nodes")
	benchOneAtATime         = flag.Bool("consolidation.oneatatime", true, "BenchmarkConsolidation: also time single-node decisions applied one at a time (minutes at 1000+ nodes)")
	benchNoPodEvents        = flag.Bool("consolidation.nopodevents", false, "BenchmarkConsolidation: do not hand the simulation the pods' informer events before the first decision")
)

// consolidationCluster is n on-demand nodes of bench-8, bench-16 and bench-32 over three
// zones, each filled to a utilisation drawn from 30-60 % (fixed seed) with pods of four
// Deployments: plain, a zonal spread, a hostname anti-affinity (one per node, groups of 50
// nodes) and one under a PDB allowing one disruption. One NodePool, budget 10 %.
func consolidationCluster(n int, its cloudprovider.InstanceTypes) *Cluster {
	return consolidationClusterGrouped(n, 50, its)
}

// consolidationClusterGrouped is consolidationCluster with anti-affinity groups of group
// nodes.
func consolidationClusterGrouped(n, group int, its cloudprovider.InstanceTypes) *Cluster {
	rng := rand.New(rand.NewPCG(3, 4))
	c := &Cluster{NodePools: map[string]*karpv1.NodePool{}, Nodes: map[string]*corev1.Node{}, PodsByNode: map[string][]*corev1.Pod{}, NodeOf: map[string]*corev1.Node{}}
	np := testNodePool("default", budgets(karpv1.Budget{Nodes: "10%"}))
	c.NodePools[np.Name] = np
	c.PDBs = append(c.PDBs, pdb("guarded", 1, map[string]string{"app": "guarded"}))
	sizes := []int64{8, 16, 32}
	for i := range n {
		name := fmt.Sprintf("n%04d", i)
		cpu := sizes[i%len(sizes)]
		it := its[cpu-1]
		nc, node := testNode(name, "default")
		for _, labels := range []map[string]string{node.Labels, nc.Labels} {
			labels[corev1.LabelTopologyZone] = fmt.Sprintf("zone-%d", 1+i%3)
			labels[corev1.LabelOSStable] = "linux"
			labels[corev1.LabelArchStable] = "amd64"
			labels[karpv1.CapacityTypeLabelKey] = karpv1.CapacityTypeOnDemand
			labels[corev1.LabelInstanceTypeStable] = it.Name
		}
		node.Status.Allocatable = it.Capacity
		nc.Status.Capacity, nc.Status.Allocatable = it.Capacity, it.Capacity
		c.NodeClaims = append(c.NodeClaims, nc)
		c.Nodes[node.Name] = node
		c.NodeOf[nc.Name] = node
		budget := int64(float64(cpu*1000) * (0.3 + 0.3*rng.Float64())) // millicores
		used := int64(0)
		for j := 0; used < budget; j++ {
			if j%4 == 0 && j > 0 {
				continue // one anti-affine pod per node
			}
			var p *corev1.Pod
			podName := fmt.Sprintf("%s-%d", name, j)
			switch j % 4 {
			case 0:
				p = testpods.New("anti-"+podName, "1", "2Gi", testpods.Labelled("app", fmt.Sprintf("anti-%d", i/group)),
					testpods.AntiAffine(corev1.LabelHostname, fmt.Sprintf("anti-%d", i/group)))
				used += 1000
			case 1:
				p = testpods.New("spread-"+podName, "500m", "1Gi", testpods.Labelled("app", "spread"),
					testpods.Spread(corev1.LabelTopologyZone, "spread", corev1.ScheduleAnyway))
				used += 500
			case 2:
				p = testpods.New("guarded-"+podName, "1", "1Gi", testpods.Labelled("app", "guarded"))
				used += 1000
			default:
				p = testpods.New("plain-"+podName, "250m", "512Mi", testpods.Labelled("app", "plain"))
				used += 250
			}
			p.Namespace = "default"
			p.UID = types.UID("pod-" + p.Name)
			p.ResourceVersion = "1"
			p.Spec.NodeName = node.Name
			p.Status.Phase = corev1.PodRunning
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: p.Labels["app"], UID: types.UID("rs-" + p.Labels["app"]), Controller: ptr.To(true)}}
			c.Pods = append(c.Pods, p)
			c.PodsByNode[node.Name] = append(c.PodsByNode[node.Name], p)
		}
	}
	return c
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// countingSimulator counts simulations.
type countingSimulator struct {
	Simulator
	n int
}

func (s *countingSimulator) Simulate(ctx context.Context, c *Cluster, cands []*Candidate) (*Simulation, error) {
	s.n++
	return s.Simulator.Simulate(ctx, c, cands)
}

// BenchmarkConsolidation measures one full consolidation decision over n nodes: multi-node
// consolidation (binary search over the first 100 candidates within the budget) and then
// single-node consolidation over the candidates in order, first success wins. Each decision
// starts from a simulator that has not loaded the cluster, as each pass of the loop reads the
// cluster afresh, but has been handed the pods' informer events (PodEvents) before the first,
// as the controller's simulation has (-consolidation.nopodevents: not); within the decision every simulation forks the one loaded snapshot. It
// reports the simulations run, the nodes each command removes and the cluster's cost per
// hour before and after the multi-node command (the one the loop would execute); then, once,
// untimed by the benchmark, how long single-node decisions applied one after another (one
// node at a time) take to save as much, and the cost they reach.
func BenchmarkConsolidation(b *testing.B) {
	sizes := []int{100, 500, 1000}
	if *benchConsolidationLarge {
		sizes = append(sizes, 2000)
	}
	its := testcatalog.Bench()
	for _, n := range sizes {
		c := consolidationCluster(n, its)
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			ctx := context.Background()
			solverSim := newSolverSimulator(b, its)
			sim := &countingSimulator{Simulator: solverSim}
			base := Consolidation{Simulator: sim, InstanceTypes: benchTypes(its)}
			multi, single := &MultiNodeConsolidation{Consolidation: base}, &SingleNodeConsolidation{Consolidation: base}
			var eventsCPU time.Duration
			if !*benchNoPodEvents {
				// The manager's pod informer delivers every pod before the first pass.
				events, cpu := solverSim.PodEvents(), processCPU(b)
				for _, p := range c.Pods {
					events.OnAdd(p, true)
				}
				eventsCPU = processCPU(b) - cpu
			}
			var multiCmd, singleCmd *Command
			var cpu time.Duration
			decisions := 0
			for b.Loop() {
				if decisions == 0 {
					cpu = processCPU(b) // after b.Loop's own collection
				}
				sim.n = 0
				solverSim.forget()
				multiCmd = decide(ctx, b, c, multi)
				singleCmd = decide(ctx, b, c, single)
				decisions++
			}
			// The process's CPU time (GC included) is what the wall time is under load.
			b.ReportMetric((processCPU(b)-cpu).Seconds()/float64(decisions), "cpu-s/op")
			b.ReportMetric(eventsCPU.Seconds(), "podevents-cpu-s") // once, before the first decision
			if multiCmd == nil || singleCmd == nil {
				b.Fatalf("no consolidation found: multi %v, single %v", multiCmd, singleCmd)
			}
			verifyCommand(b, c, multiCmd, its)
			verifyCommand(b, c, singleCmd, its)
			before := clusterCost(ctx, b, c, its)
			afterMulti := clusterCost(ctx, b, applyCommand(b, c, multiCmd, its, "multi"), its)
			b.ReportMetric(float64(sim.n), "simulations/op")
			b.ReportMetric(float64(len(multiCmd.Candidates)), "multi-removed")
			b.ReportMetric(float64(len(multiCmd.Replacements)), "multi-replacements")
			b.ReportMetric(float64(len(singleCmd.Candidates)), "single-removed")
			b.ReportMetric(before, "cost-before/h")
			b.ReportMetric(afterMulti, "cost-after-multi/h")

			if !*benchOneAtATime {
				return
			}
			// One node at a time: single-node decisions, each applied before the next (a new
			// cluster each time, as the loop would read), until they save as much.
			start := time.Now()
			one, decisions, cost := c, 0, before
			for cost > afterMulti+1e-9 && decisions < 2*len(multiCmd.Candidates) {
				cmd := decide(ctx, b, one, single)
				if cmd == nil {
					break
				}
				one = applyCommand(b, one, cmd, its, fmt.Sprintf("one%d", decisions))
				decisions++
				cost = clusterCost(ctx, b, one, its)
			}
			b.ReportMetric(time.Since(start).Seconds(), "one-at-a-time-s")
			b.ReportMetric(float64(decisions), "one-at-a-time-decisions")
			b.ReportMetric(cost, "cost-after-one-at-a-time/h")
		})
	}
}

// rebuildingPlanner hides the solver's PlanDisruptionWithout, so every simulation loads the
// cluster again (the way before forking).
type rebuildingPlanner struct{ DisruptionPlanner }

// BenchmarkConsolidationAllRefused is single-node consolidation's worst case: every node
// holds a pod of one hostname anti-affinity group, so no pod set moves to another node, and
// the NodePool's limits allow no replacement; every candidate is simulated and refused (the
// multi-node search before it refuses every prefix). mode=fork simulates each candidate in a
// fork of one loaded cluster; mode=rebuild loads the whole cluster for each (up to 500 nodes:
// beyond, the 3-minute budget cuts it).
func BenchmarkConsolidationAllRefused(b *testing.B) {
	sizes := []int{100, 500, 1000}
	if *benchConsolidationLarge {
		sizes = append(sizes, 2000)
	}
	its := testcatalog.Bench()
	for _, n := range sizes {
		c := consolidationClusterGrouped(n, n, its)
		c.NodePools["default"].Spec.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		for _, mode := range []string{"fork", "rebuild"} {
			if mode == "rebuild" && n > 500 {
				continue
			}
			b.Run(fmt.Sprintf("nodes=%d/mode=%s", n, mode), func(b *testing.B) {
				ctx := context.Background()
				solverSim := newSolverSimulator(b, its)
				if mode == "rebuild" {
					solverSim.planner = rebuildingPlanner{solverSim.planner}
				}
				sim := &countingSimulator{Simulator: solverSim}
				base := Consolidation{Simulator: sim, InstanceTypes: benchTypes(its)}
				multi, single := &MultiNodeConsolidation{Consolidation: base}, &SingleNodeConsolidation{Consolidation: base}
				for b.Loop() {
					sim.n = 0
					solverSim.forget()
					if cmd := decide(ctx, b, c, multi); cmd != nil {
						b.Fatalf("multi-node command %s, want none", cmd)
					}
					if cmd := decide(ctx, b, c, single); cmd != nil {
						b.Fatalf("single-node command %s, want none", cmd)
					}
				}
				b.ReportMetric(float64(sim.n), "simulations/op")
			})
		}
	}
}
