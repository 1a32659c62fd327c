package disruption

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1alpha1 "github.com/joinery-dev/joinery/apis/autoscaling/v1alpha1"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/simulation/buffer"
)

// readyBuffer is a CapacityBuffer resolved to replicas chunks of a PodTemplate requesting cpu.
func readyBuffer(name string, replicas int32, cpu string) []client.Object {
	tpl := cpuPod("chunk", "", cpu)
	pt := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: name + "-tpl", Namespace: "default"},
		Template: corev1.PodTemplateSpec{Spec: tpl.Spec}}
	pt.Template.Spec.NodeName = ""
	b := &autoscalingv1alpha1.CapacityBuffer{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("buffer-" + name)},
		Status: autoscalingv1alpha1.CapacityBufferStatus{
			Replicas:       &replicas,
			PodTemplateRef: &autoscalingv1alpha1.LocalObjectRef{Name: pt.Name},
			Conditions:     []metav1.Condition{{Type: autoscalingv1alpha1.ConditionTypeReadyForProvisioning, Status: metav1.ConditionTrue, Reason: "Ready"}},
		},
	}
	return []client.Object{pt, b}
}

// TestBuffersKeepCapacity: two small nodes, a with a 1-cpu pod, b empty, and a buffer of one
// 1200m chunk, which only fits b. Without the buffer, b is empty and goes. With it, the chunk
// is b's pod: b is not empty, costs less to disrupt than a, and neither node can go — the
// chunk fits nowhere else, nor does a's pod fit b beside it.
func TestBuffersKeepCapacity(t *testing.T) {
	its := testCatalog(t, 0)
	objs := []client.Object{testNodePool("default", onDemandOnly, allBudget)}
	objs = append(objs, pair(testNode("a", "default", typed(its, "small", "on-demand")))...)
	objs = append(objs, pair(testNode("b", "default", typed(its, "small", "on-demand")))...)
	objs = append(objs, cpuPod("a-0", "node-a", "1"))
	objs = append(objs, readyBuffer("spare", 1, "1200m")...)
	c := newClient(t, objs...)
	sim := newSolverSimulator(t, its)
	consolidate := func(cluster *Cluster) (*Command, []Blocked) {
		t.Helper()
		m := &SingleNodeConsolidation{Consolidation: Consolidation{Simulator: sim, InstanceTypes: benchTypes(its)}}
		cands, _ := cluster.Candidates(m.Reason(), m.Class())
		allowed, _ := cluster.Allowed(m.Reason(), epoch)
		cmd, blocked, err := m.ComputeCommand(context.Background(), cluster, allowed, cands)
		if err != nil {
			t.Fatal(err)
		}
		return cmd, blocked
	}
	candidate := func(cluster *Cluster, name string) *Candidate {
		t.Helper()
		cands, _ := cluster.Candidates((&Emptiness{}).Reason(), ClassGraceful)
		for _, cand := range cands {
			if cand.Name() == name {
				return cand
			}
		}
		t.Fatalf("%s is not a candidate", name)
		return nil
	}

	t.Run("without buffers", func(t *testing.T) {
		cluster, err := New(c, c, nil, nil, nil, Options{}).load(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if b := candidate(cluster, "b"); !(&Emptiness{}).ShouldDisrupt(b) {
			t.Fatalf("b is not empty: %v", b.Pods)
		}
		cmd, blocked := consolidate(cluster)
		if cmd == nil || strings.Join(cmd.CandidateNames(), ",") != "b" || cmd.Decision() != DecisionDelete {
			t.Fatalf("command %v (blocked %+v), want b deleted", cmd, blocked)
		}
	})

	t.Run("with buffers", func(t *testing.T) {
		ctrl := New(c, c, nil, nil, nil, Options{Buffers: &Buffers{Reader: c, Simulator: sim}})
		cluster, err := ctrl.load(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		b := candidate(cluster, "b")
		if len(b.Pods) != 1 || !buffer.IsVirtual(b.Pods[0]) || buffer.Of(b.Pods[0]) != "default/spare" {
			t.Fatalf("b's pods %v, want the buffer's one chunk", b.Pods)
		}
		if a := candidate(cluster, "a"); len(a.Pods) != 1 || buffer.IsVirtual(a.Pods[0]) {
			t.Fatalf("a's pods %v, want its one real pod", a.Pods)
		}
		if (&Emptiness{}).ShouldDisrupt(b) {
			t.Error("emptiness would remove b, which holds the buffer")
		}
		if got := DisruptionCost(b, epoch); got != BufferPodCost {
			t.Errorf("b's disruption cost %v, want %v", got, BufferPodCost)
		}
		if got := DisruptionCost(candidate(cluster, "a"), epoch); got <= BufferPodCost {
			t.Errorf("a's disruption cost %v, want more than b's", got)
		}
		cmd, blocked := consolidate(cluster)
		if cmd != nil {
			t.Fatalf("command %s, want none: the buffer would no longer fit", cmd)
		}
		if len(blocked) != 2 || blocked[0].NodeClaim.Name != "b" {
			t.Fatalf("blocked %+v, want b (cheapest to disrupt) then a", blocked)
		}
	})
}

// TestRealPodPosingAsVirtualKeepsItsProtections: any pod author can copy a virtual pod's
// annotation, owner reference and name onto a real pod; the API server still gives it a UID
// of its own, so it stays a real pod: its do-not-disrupt annotation and its PDB still block
// its node, and it costs what a real pod costs.
func TestRealPodPosingAsVirtualKeepsItsProtections(t *testing.T) {
	posing := func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[buffer.AnnotationKey] = "default/spare"
		p.Name = "capacitybuffer-spare-0"
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: autoscalingv1alpha1.SchemeGroupVersion.String(),
			Kind: "CapacityBuffer", Name: "spare", UID: "buffer-spare", Controller: ptr.To(true)}}
	}
	tests := []struct {
		name    string
		objs    []client.Object
		blocked string
	}{
		{name: "do-not-disrupt", objs: objects(pair(testNode("a", "default")), testPod("x", "node-a", podDoNotDisrupt, posing)),
			blocked: "Cannot disrupt Node: pod default/capacitybuffer-spare-0 has karpenter.sh/do-not-disrupt annotation"},
		{name: "blocking PDB", objs: objects(pair(testNode("a", "default")), testPod("x", "node-a", posing), pdb("x", 0, map[string]string{"app": "x"})),
			blocked: "Cannot disrupt Node: pdb default/x prevents pod evictions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cluster, _ := loadCluster(t, append(tt.objs, testNodePool("default"))...)
			for _, p := range cluster.Pods {
				if buffer.IsVirtual(p) || buffer.Of(p) != "" {
					t.Fatalf("real pod %s taken for a virtual pod", p.Name)
				}
			}
			cands, blocked := cluster.Candidates(karpv1.DisruptionReasonDrifted, ClassEventual)
			if len(cands) != 0 || len(blocked) != 1 || blocked[0].Message != tt.blocked {
				t.Fatalf("candidates %d, blocked %+v; want blocked %q", len(cands), blocked, tt.blocked)
			}
		})
	}
	// The genuine article, as the buffer makes it, is recognised.
	b := &autoscalingv1alpha1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Name: "spare", Namespace: "default", UID: "buffer-spare"}}
	for _, p := range buffer.VirtualPods(b, &corev1.PodTemplateSpec{}, 2) {
		if !buffer.IsVirtual(p) || buffer.Of(p) != "default/spare" {
			t.Errorf("virtual pod %s not recognised", p.Name)
		}
	}
}
