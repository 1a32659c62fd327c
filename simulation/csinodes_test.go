package simulation

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

const ebsDriver = "ebs.csi.aws.com"

func TestNewHypotheticalCSINode(t *testing.T) {
	if csi := NewHypotheticalCSINode(NodeTemplate{Name: "n"}); csi != nil {
		t.Errorf("a node without volume limits got CSINode %v", csi)
	}
	csi := NewHypotheticalCSINode(NodeTemplate{Name: "n", VolumeLimits: map[string]int32{ebsDriver: 26, "other.csi": 3}})
	if csi == nil || csi.Name != "n" || len(csi.Spec.Drivers) != 2 {
		t.Fatalf("CSINode %+v, want one named n with two drivers", csi)
	}
	for i, want := range []struct {
		name  string
		count int32
	}{{ebsDriver, 26}, {"other.csi", 3}} {
		d := csi.Spec.Drivers[i]
		if d.Name != want.name || d.NodeID != "n" || d.Allocatable == nil || d.Allocatable.Count == nil || *d.Allocatable.Count != want.count {
			t.Errorf("driver %d = %+v, want %s with count %d", i, d, want.name, want.count)
		}
	}
}

// volumePods returns n pods, each mounting perPod claims of a bound EBS CSI volume, and the
// volumes and claims.
func volumePods(n, perPod int) ([]*corev1.Pod, []runtime.Object) {
	var pods []*corev1.Pod
	var objects []runtime.Object
	for i := range n {
		p := testPod(fmt.Sprintf("db-%d", i), "100m", "100Mi")
		for j := range perPod {
			name := fmt.Sprintf("db-%d-data-%d", i, j)
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name},
			}})
			objects = append(objects,
				&corev1.PersistentVolume{
					ObjectMeta: metav1.ObjectMeta{Name: "pv-" + name},
					Spec: corev1.PersistentVolumeSpec{
						Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
						AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
						PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: ebsDriver, VolumeHandle: "vol-" + name}},
						ClaimRef:               &corev1.ObjectReference{Namespace: "default", Name: name},
					},
					Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound},
				},
				&corev1.PersistentVolumeClaim{
					ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes"}},
					Spec: corev1.PersistentVolumeClaimSpec{
						AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
						VolumeName:  "pv-" + name,
						Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
					},
					Status: corev1.PersistentVolumeClaimStatus{
						Phase:       corev1.ClaimBound,
						AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
						Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
					},
				})
		}
		pods = append(pods, p)
	}
	return pods, objects
}

func newVolumeEngine(t *testing.T, nodes []*corev1.Node, objects []runtime.Object) *Engine {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	profile, err := DefaultProfile()
	if err != nil {
		t.Fatal(err)
	}
	snapshot, err := NewSnapshot(nodes, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset(objects...)
	factory := informers.NewSharedInformerFactory(client, 0)
	engine, err := NewEngine(ctx, snapshot, profile, nil, FrameworkOptions{Client: client, InformerFactory: factory})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return engine
}

func smallNode(name string, limits map[string]int32) NodeTemplate {
	return NodeTemplate{Name: name, VolumeLimits: limits, Allocatable: corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}}
}

// TestHypotheticalNodeVolumeLimits: NodeVolumeLimits counts a hypothetical node's volumes
// against the CSINode its template carries, forks undo it, and a node that exists keeps
// the CSINode the cluster has. On main a hypothetical node had no CSINode: all four pods of
// 20 volumes fitted one node.
func TestHypotheticalNodeVolumeLimits(t *testing.T) {
	ctx := t.Context()
	pods, objects := volumePods(4, 20)
	real := NewHypotheticalNode(smallNode("real", nil))
	limit := int32(30)
	objects = append(objects, &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{Name: "real"},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{
			Name: ebsDriver, NodeID: "real", Allocatable: &storagev1.VolumeNodeResources{Count: &limit},
		}}},
	})
	engine := newVolumeEngine(t, []*corev1.Node{real}, objects)
	s := engine.Snapshot()

	if _, err := s.AddHypotheticalNode(smallNode("new", map[string]int32{ebsDriver: 26})); err != nil {
		t.Fatal(err)
	}
	if status := engine.SchedulePod(ctx, pods[0], "new"); !status.IsSuccess() {
		t.Fatalf("first pod of 20 volumes on a node of 26: %v", status.AsError())
	}
	status := engine.CheckPredicates(ctx, pods[1], "new")
	if status.IsSuccess() || !strings.Contains(status.Message(), "exceed max volume count") {
		t.Fatalf("second pod of 20 volumes on a node of 26: %v, want exceed max volume count", status)
	}
	// The real node's own CSINode (30) holds one pod, not two.
	if status := engine.SchedulePod(ctx, pods[2], "real"); !status.IsSuccess() {
		t.Fatalf("pod on the real node: %v", status.AsError())
	}
	if status := engine.CheckPredicates(ctx, pods[3], "real"); status.IsSuccess() {
		t.Fatal("a second pod of 20 volumes fits the real node's limit of 30")
	}

	// A relabelled node keeps the limits of its template; a fork that raises them reverts.
	engine.Fork()
	if _, err := s.ReplaceHypotheticalNode(smallNode("new", map[string]int32{ebsDriver: 64})); err != nil {
		t.Fatal(err)
	}
	if status := engine.CheckPredicates(ctx, pods[1], "new"); !status.IsSuccess() {
		t.Fatalf("second pod on a node of 64: %v", status.AsError())
	}
	if err := engine.Revert(); err != nil {
		t.Fatal(err)
	}
	if csi, _ := s.CSINode("new"); csi == nil || *csi.Spec.Drivers[0].Allocatable.Count != 26 {
		t.Fatalf("after revert CSINode %v, want the count of 26 back", csi)
	}
	if status := engine.CheckPredicates(ctx, pods[1], "new"); status.IsSuccess() {
		t.Fatal("after revert the second pod fits a node of 26")
	}

	// A node removed in a fork takes its CSINode along, and gets it back on revert.
	engine.Fork()
	if err := s.RemoveNode("new"); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.CSINode("new"); ok {
		t.Fatal("a removed node kept its CSINode")
	}
	if err := engine.Revert(); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.CSINode("new"); !ok {
		t.Fatal("revert did not restore the CSINode")
	}

	// A node without limits stays unlimited, as a node without a CSINode is.
	if _, err := s.AddHypotheticalNode(smallNode("unlimited", nil)); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods[1:] {
		if status := engine.SchedulePod(ctx, p, "unlimited"); !status.IsSuccess() {
			t.Fatalf("pod %s on a node without limits: %v", p.Name, status.AsError())
		}
	}
}
