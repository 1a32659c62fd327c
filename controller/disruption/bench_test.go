package disruption

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/kwok/catalog"
)

type benchTypes cloudprovider.InstanceTypes

func (b benchTypes) GetInstanceTypes(context.Context, *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	return b, nil
}

// benchCluster is n nodes of 8 cpu / 32 GiB, each running 10 pods of three Deployments
// (250m/512Mi, 500m/1Gi, 1/2Gi, a zonal spread on the middle one) and a DaemonSet pod; every
// tenth node is empty, every tenth drifted; PDBs allow one disruption each.
func benchCluster(n int) *Cluster {
	c := &Cluster{NodePools: map[string]*karpv1.NodePool{}, Nodes: map[string]*corev1.Node{}, PodsByNode: map[string][]*corev1.Pod{}, NodeOf: map[string]*corev1.Node{}}
	np := testNodePool("default", budgets(karpv1.Budget{Nodes: "10%"}))
	c.NodePools[np.Name] = np
	zones := []string{"test-zone-a", "test-zone-b", "test-zone-c"}
	shapes := []struct{ app, cpu, mem string }{{"small", "250m", "512Mi"}, {"medium", "500m", "1Gi"}, {"large", "1", "2Gi"}}
	for _, s := range shapes {
		c.PDBs = append(c.PDBs, pdb(s.app, 1, map[string]string{"app": s.app}))
	}
	for i := range n {
		name := fmt.Sprintf("n%04d", i)
		opts := []ncOption{}
		if i%10 == 5 {
			opts = append(opts, drifted)
		}
		nc, node := testNode(name, "default", opts...)
		node.Labels[corev1.LabelTopologyZone] = zones[i%3]
		node.Labels[corev1.LabelOSStable] = "linux"
		node.Labels[corev1.LabelArchStable] = "amd64"
		node.Labels[karpv1.CapacityTypeLabelKey] = "on-demand"
		node.Labels[corev1.LabelInstanceTypeStable] = "c5.2xlarge"
		node.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("58")}
		nc.Status.Capacity, nc.Status.Allocatable = node.Status.Allocatable, node.Status.Allocatable
		c.NodeClaims = append(c.NodeClaims, nc)
		c.Nodes[node.Name] = node
		c.NodeOf[nc.Name] = node
		ds := testPod("ds-"+name, node.Name, daemon)
		c.Pods = append(c.Pods, ds)
		c.PodsByNode[node.Name] = append(c.PodsByNode[node.Name], ds)
		if i%10 == 0 {
			continue
		}
		for j := range 10 {
			s := shapes[j%3]
			p := testPod(fmt.Sprintf("%s-%s-%d", s.app, name, j), node.Name, labelled("app", s.app))
			p.Labels = map[string]string{"app": s.app}
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: s.app, UID: types.UID("rs-" + s.app), Controller: ptr.To(true)}}
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(s.cpu), corev1.ResourceMemory: resource.MustParse(s.mem)}
			if s.app == "medium" {
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 5, TopologyKey: corev1.LabelTopologyZone,
					WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "medium"}}}}
			}
			c.Pods = append(c.Pods, p)
			c.PodsByNode[node.Name] = append(c.PodsByNode[node.Name], p)
		}
	}
	return c
}

// benchSimulator is the real solver over the kwok provider's catalog.
func benchSimulator(b testing.TB) *SolverSimulator {
	b.Helper()
	f, err := catalog.Default()
	if err != nil {
		b.Fatal(err)
	}
	its, err := f.Build(catalog.BuildOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return newSolverSimulator(b, its)
}

// BenchmarkDisruptionPass measures one pass of each method over n nodes: candidates (PDBs,
// do-not-disrupt), budgets and the method's command — for Drift, the simulation of the oldest
// drifted node's 10 pods with the solver over the rest of the cluster.
func BenchmarkDisruptionPass(b *testing.B) {
	for _, n := range []int{100, 500, 1000} {
		c := benchCluster(n)
		sim := benchSimulator(b)
		for _, m := range []Method{&Emptiness{}, &Drift{Simulator: sim}} {
			b.Run(fmt.Sprintf("%s/nodes=%d", m.Name(), n), func(b *testing.B) {
				ctx := context.Background()
				for b.Loop() {
					cands, _ := c.Candidates(m.Reason(), m.Class())
					var mine []*Candidate
					for _, cand := range cands {
						if m.ShouldDisrupt(cand) {
							mine = append(mine, cand)
						}
					}
					allowed, _ := c.Allowed(m.Reason(), epoch)
					cmd, _, err := m.ComputeCommand(ctx, c, allowed, mine)
					if err != nil {
						b.Fatal(err)
					}
					if cmd == nil {
						b.Fatal("no command")
					}
				}
			})
		}
	}
}
