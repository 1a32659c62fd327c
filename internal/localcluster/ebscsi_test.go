package localcluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

// TestEBSCSIStandIn: the stand-in publishes a node's CSINode with its type's attach limit,
// provisions a claim of an ebs.csi.aws.com class once a node is selected, in that node's zone,
// and deletes a released volume it provisioned.
func TestEBSCSIStandIn(t *testing.T) {
	ctx := t.Context()
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	class := "ebs"
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "uid-n1", Labels: map[string]string{
		corev1.LabelInstanceTypeStable: "c5.large", corev1.LabelTopologyZone: "test-zone-b",
	}}}
	claim := func(name string, annotations map[string]string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Annotations: annotations},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: &class,
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}
	}
	released := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "old", Annotations: map[string]string{annProvisionedBy: "ebs.csi.aws.com"}},
		Spec:       corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete},
		Status:     corev1.PersistentVolumeStatus{Phase: corev1.VolumeReleased},
	}
	client := fake.NewClientset(node, released,
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Provisioner: "ebs.csi.aws.com", VolumeBindingMode: &mode},
		claim("picked", map[string]string{annSelectedNode: "n1"}),
		claim("waiting", nil))
	if err := syncEBSCSI(ctx, client); err != nil {
		t.Fatal(err)
	}

	csi, err := client.StorageV1().CSINodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := csi.Spec.Drivers; len(d) != 1 || d[0].Name != "ebs.csi.aws.com" || *d[0].Allocatable.Count != 26 {
		t.Errorf("CSINode drivers %+v, want ebs.csi.aws.com with 26 (c5.large)", d)
	}
	pvs, err := client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pvs.Items) != 1 {
		t.Fatalf("volumes %d, want the one for the picked claim (and the released one deleted)", len(pvs.Items))
	}
	pv := pvs.Items[0]
	if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.Name != "picked" || pv.Spec.CSI == nil || pv.Spec.CSI.Driver != "ebs.csi.aws.com" {
		t.Errorf("volume %+v, want a CSI volume for claim picked", pv.Spec)
	}
	if zone := pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values; len(zone) != 1 || zone[0] != "test-zone-b" {
		t.Errorf("volume zone %v, want the node's", zone)
	}
	if _, err := client.StorageV1().CSIDrivers().Get(ctx, "ebs.csi.aws.com", metav1.GetOptions{}); err != nil {
		t.Errorf("CSIDriver: %v", err)
	}
}
