package disruption

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-helpers/storage/volume"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
)

// mountingEBS makes the pod mount n claims, each bound to an EBS CSI volume, and adds the
// claims and volumes to kube (the Filters read them through informers).
func mountingEBS(n int, kube *[]runtime.Object) podOption {
	return func(p *corev1.Pod) {
		for i := range n {
			name := fmt.Sprintf("%s-data-%d", p.Name, i)
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name},
			}})
			pvc := &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: p.Namespace, UID: types.UID("uid-" + name),
					Annotations: map[string]string{volume.AnnBindCompleted: "yes"}},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeName: "pv-" + name,
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
			}
			pv := &corev1.PersistentVolume{
				ObjectMeta: metav1.ObjectMeta{Name: "pv-" + name},
				Spec: corev1.PersistentVolumeSpec{
					Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					ClaimRef:    &corev1.ObjectReference{Namespace: p.Namespace, Name: name, UID: pvc.UID},
					PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
						Driver: cloudprovider.EBSCSIDriver, VolumeHandle: "vol-" + name}},
				},
				Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound},
			}
			*kube = append(*kube, pvc, pv)
		}
	}
}

// ebsCSINode is the CSINode the EBS CSI driver published on an existing node.
func ebsCSINode(node string, limit int32) *storagev1.CSINode {
	return &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{Name: node},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{
			Name: cloudprovider.EBSCSIDriver, NodeID: node, Allocatable: &storagev1.VolumeNodeResources{Count: &limit},
		}}},
	}
}

// TestDisruptionSimulationCountsAttachLimits (issue 27, part 1): drift and consolidation
// simulate with the attach limits provisioning uses. Two pods, each mounting more than half of
// the EBS attach limit, leave a drifted node: a replacement is a hypothetical node with the
// CSINode its instance type will publish, so they need two replacements, not one (cpu alone
// fits both on one); a node that exists keeps the CSINode its driver published, here room
// for one of them.
func TestDisruptionSimulationCountsAttachLimits(t *testing.T) {
	its := testCatalog(t, 0)
	limit := its[0].VolumeLimits[cloudprovider.EBSCSIDriver]
	for _, it := range its {
		if it.VolumeLimits[cloudprovider.EBSCSIDriver] != limit || limit == 0 {
			t.Fatalf("the test catalog's types attach %v EBS volumes; the test needs one limit for all", it.VolumeLimits)
		}
	}
	perPod := int(limit)/2 + 1
	cases := []struct {
		name         string
		existing     bool // node b, with room by cpu for both pods and by its CSINode for one
		replacements int
		onB          int
	}{
		{name: "replacements carry their instance type's limit", replacements: 2},
		{name: "an existing node keeps its own CSINode", existing: true, replacements: 1, onB: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var kube []runtime.Object
			objs := []client.Object{testNodePool("default")}
			objs = append(objs, pair(testNode("a", "default", drifted, typed(its, "large", karpv1.CapacityTypeOnDemand)))...)
			objs = append(objs, testPod("db-0", "node-a", mountingEBS(perPod, &kube)), testPod("db-1", "node-a", mountingEBS(perPod, &kube)))
			if tc.existing {
				objs = append(objs, pair(testNode("b", "default", typed(its, "large", karpv1.CapacityTypeOnDemand)))...)
				kube = append(kube, ebsCSINode("node-b", int32(perPod)))
			}
			cluster, _ := loadCluster(t, objs...)
			all, _ := cluster.Candidates(karpv1.DisruptionReasonDrifted, ClassEventual)
			var cands []*Candidate
			for _, c := range all {
				if c.NodeClaim.Name == "a" {
					cands = append(cands, c)
				}
			}
			if len(cands) != 1 {
				t.Fatalf("%d candidates for node a, want 1", len(cands))
			}
			result, err := newSolverSimulator(t, its, kube...).Simulate(context.Background(), cluster, cands)
			if err != nil {
				t.Fatal(err)
			}
			if why := result.Refusal(cluster, cands); why != nil {
				t.Fatalf("refused: %s", why)
			}
			onB := 0
			for _, dest := range result.Destinations {
				if dest == "node-b" || dest == "b" {
					onB++
				}
			}
			if len(result.Replacements) != tc.replacements || onB != tc.onB {
				t.Errorf("%d replacements and %d pods onto b (destinations %v), want %d and %d: two pods of %d EBS volumes each, %d attach per node",
					len(result.Replacements), onB, result.Destinations, tc.replacements, tc.onB, perPod, limit)
			}
			if d0, d1 := result.Destinations["pod-db-0"], result.Destinations["pod-db-1"]; d0 == d1 {
				t.Errorf("both pods go to %q, whose attach limit holds one", d0)
			}
		})
	}
}
