package localcluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/aws/catalogdata"
)

// The EBS CSI stand-in. kwok runs no kubelet plugins, so nothing would publish a node's
// CSINode or provision a volume. With kwok among the components, the process that started
// the cluster plays the Amazon EBS CSI driver's parts the scheduler and the volume
// controllers see:
//   - the CSIDriver object (attachRequired false: no attacher runs);
//   - each Node's CSINode, with the attach limit the driver reports for its instance type
//     (ebsVolumeLimit), owned by the Node as the kubelet's is;
//   - a PersistentVolume for each claim of a StorageClass whose provisioner is
//     ebs.csi.aws.com once kube-scheduler picked its node (WaitForFirstConsumer), in the
//     node's zone; kube-controller-manager binds it. Released volumes it provisioned with
//     reclaim policy Delete are deleted.
//
// It reconciles by listing every second; it stops with the cluster.

const (
	ebsCSIResync          = time.Second
	annSelectedNode       = "volume.kubernetes.io/selected-node"
	annProvisionedBy      = "pv.kubernetes.io/provisioned-by"
	ebsCSIZoneTopologyKey = "topology.ebs.csi.aws.com/zone"
)

// startEBSCSI runs the stand-in until Stop.
func (c *Cluster) startEBSCSI() error {
	client, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return fmt.Errorf("ebs csi stand-in: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.stopEBSCSI = cancel
	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := syncEBSCSI(ctx, client); err != nil && ctx.Err() == nil {
			c.log.Debug("ebs csi stand-in", "err", err.Error())
		}
	}, ebsCSIResync)
	return nil
}

func syncEBSCSI(ctx context.Context, client kubernetes.Interface) error {
	if err := ensureCSIDriver(ctx, client); err != nil {
		return err
	}
	if err := syncCSINodes(ctx, client); err != nil {
		return err
	}
	return syncEBSVolumes(ctx, client)
}

func ensureCSIDriver(ctx context.Context, client kubernetes.Interface) error {
	attach := false
	_, err := client.StorageV1().CSIDrivers().Create(ctx, &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: cloudprovider.EBSCSIDriver},
		Spec:       storagev1.CSIDriverSpec{AttachRequired: &attach},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create CSIDriver: %w", err)
	}
	return nil
}

// syncCSINodes publishes the CSINode of each Node of a known instance type that has none.
func syncCSINodes(ctx context.Context, client kubernetes.Interface) error {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	existing, err := client.StorageV1().CSINodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, csi := range existing.Items {
		have[csi.Name] = true
	}
	for i := range nodes.Items {
		node := &nodes.Items[i]
		it := node.Labels[corev1.LabelInstanceTypeStable]
		if it == "" || have[node.Name] || node.DeletionTimestamp != nil {
			continue
		}
		if _, err := client.StorageV1().CSINodes().Create(ctx, ebsCSINode(node, ebsVolumeLimit(it, node.Labels)), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create CSINode %s: %w", node.Name, err)
		}
	}
	return nil
}

// ebsVolumeLimit is the attach limit the driver reports on a node of the named type: from
// EC2's facts for the name (the kwok catalog's EC2-like types and the AWS emulator's take
// theirs from the same catalogdata), else from the hypervisor label.
func ebsVolumeLimit(instanceType string, labels map[string]string) int32 {
	f := cloudprovider.EBSFacts{Name: instanceType, Xen: labels["karpenter.k8s.aws/instance-hypervisor"] == "xen"}
	if d, ok := catalogdata.Lookup(instanceType); ok {
		f.Xen = d.Hypervisor == "xen"
		if !f.Xen {
			f.NVMeInstanceStore = d.InstanceStoreDisks
		}
	}
	return cloudprovider.EBSVolumeLimit(f)
}

func ebsCSINode(node *corev1.Node, limit int32) *storagev1.CSINode {
	return &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{
			Name:            node.Name,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}},
		},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{
			Name:         cloudprovider.EBSCSIDriver,
			NodeID:       node.Name,
			TopologyKeys: []string{ebsCSIZoneTopologyKey},
			Allocatable:  &storagev1.VolumeNodeResources{Count: &limit},
		}}},
	}
}

// syncEBSVolumes provisions the claims kube-scheduler picked a node for and deletes the
// released volumes it provisioned.
func syncEBSVolumes(ctx context.Context, client kubernetes.Interface) error {
	classes, err := client.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	ours := map[string]*storagev1.StorageClass{}
	for i := range classes.Items {
		if classes.Items[i].Provisioner == cloudprovider.EBSCSIDriver {
			ours[classes.Items[i].Name] = &classes.Items[i]
		}
	}
	if len(ours) == 0 {
		return nil
	}
	claims, err := client.CoreV1().PersistentVolumeClaims(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range claims.Items {
		pvc := &claims.Items[i]
		nodeName := pvc.Annotations[annSelectedNode]
		if pvc.Spec.VolumeName != "" || nodeName == "" || pvc.Spec.StorageClassName == nil || pvc.DeletionTimestamp != nil {
			continue
		}
		sc := ours[*pvc.Spec.StorageClassName]
		if sc == nil {
			continue
		}
		node, err := client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			continue // the scheduler picks again
		}
		if _, err := client.CoreV1().PersistentVolumes().Create(ctx, ebsVolume(pvc, sc, node), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("provision %s/%s: %w", pvc.Namespace, pvc.Name, err)
		}
	}
	volumes, err := client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, pv := range volumes.Items {
		if pv.Annotations[annProvisionedBy] == cloudprovider.EBSCSIDriver && pv.Status.Phase == corev1.VolumeReleased &&
			pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete {
			if err := client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete released volume %s: %w", pv.Name, err)
			}
		}
	}
	return nil
}

// ebsVolume is the volume the driver would create for pvc on node: in the node's zone, named
// as the external provisioner names them.
func ebsVolume(pvc *corev1.PersistentVolumeClaim, sc *storagev1.StorageClass, node *corev1.Node) *corev1.PersistentVolume {
	reclaim := corev1.PersistentVolumeReclaimDelete
	if sc.ReclaimPolicy != nil {
		reclaim = *sc.ReclaimPolicy
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "pvc-" + string(pvc.UID),
			Annotations: map[string]string{annProvisionedBy: cloudprovider.EBSCSIDriver},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: pvc.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   pvc.Spec.AccessModes,
			StorageClassName:              sc.Name,
			PersistentVolumeReclaimPolicy: reclaim,
			VolumeMode:                    pvc.Spec.VolumeMode,
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID,
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver:       cloudprovider.EBSCSIDriver,
				VolumeHandle: "vol-" + string(pvc.UID),
				FSType:       "ext4",
			}},
		},
	}
	if zone := node.Labels[corev1.LabelTopologyZone]; zone != "" {
		pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}},
		}}}}
	}
	return pv
}
