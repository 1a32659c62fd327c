package simulation

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/scheduling"
)

// NodeTemplate describes a node that does not exist yet.
type NodeTemplate struct {
	Name string
	// Requirements contribute a label for every key that allows exactly one value; keys still
	// open are for the caller to decide (with Labels) before handing the node to the Filters.
	Requirements scheduling.Requirements
	// Labels are set on top of those from Requirements.
	Labels      map[string]string
	Taints      []corev1.Taint
	Allocatable corev1.ResourceList
	// VolumeLimits are the attach limits by CSI driver name that the node's CSINode reports
	// (cloudprovider.InstanceType.VolumeLimits); none means the node gets no CSINode, which
	// NodeVolumeLimits reads as unlimited.
	VolumeLimits map[string]int32
	// Devices are the devices the node's DRA drivers will publish in its ResourceSlices
	// (cloudprovider.InstanceType.Devices); none means the node gets no slices.
	Devices []cloudprovider.DeviceSet
}

// NewHypotheticalNode builds the Node the Filters see for t: labels (with
// kubernetes.io/hostname set to the name, as the kubelet sets it, and each of
// scheduling.LabelAliases set to its key's value), taints, and allocatable equal to capacity, Ready.
func NewHypotheticalNode(t NodeTemplate) *corev1.Node {
	labels := t.Requirements.Labels()
	maps.Copy(labels, t.Labels)
	if _, ok := labels[corev1.LabelHostname]; !ok {
		labels[corev1.LabelHostname] = t.Name
	}
	for alias, v := range scheduling.LabelAliases(labels) {
		if _, set := labels[alias]; !set {
			labels[alias] = v
		}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: t.Name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: t.Taints},
		Status: corev1.NodeStatus{
			Capacity:    t.Allocatable,
			Allocatable: t.Allocatable,
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Phase:       corev1.NodeRunning,
		},
	}
}

// NewHypotheticalCSINode builds the CSINode the CSI drivers of t's node will publish: one
// driver entry per volume limit, with the limit as its allocatable count (the node ID is the
// node's name; the topology keys are left out, since no Filter reads them). It is nil when t
// has no volume limits.
func NewHypotheticalCSINode(t NodeTemplate) *storagev1.CSINode {
	if len(t.VolumeLimits) == 0 {
		return nil
	}
	csi := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: t.Name}}
	for _, driver := range slices.Sorted(maps.Keys(t.VolumeLimits)) {
		count := t.VolumeLimits[driver]
		csi.Spec.Drivers = append(csi.Spec.Drivers, storagev1.CSINodeDriver{
			Name:        driver,
			NodeID:      t.Name,
			Allocatable: &storagev1.VolumeNodeResources{Count: &count},
		})
	}
	return csi
}

// AddHypotheticalNode adds the node t describes, with its CSINode and ResourceSlices, and
// returns the node.
func (s *Snapshot) AddHypotheticalNode(t NodeTemplate) (*corev1.Node, error) {
	node := NewHypotheticalNode(t)
	if err := s.AddNode(node); err != nil {
		return nil, err
	}
	s.SetCSINode(t.Name, NewHypotheticalCSINode(t))
	s.SetResourceSlices(t.Name, NewHypotheticalResourceSlices(t))
	return node, nil
}

// ReplaceHypotheticalNode replaces the Node object, the CSINode and the ResourceSlices of the
// node t names, keeping its pods.
func (s *Snapshot) ReplaceHypotheticalNode(t NodeTemplate) (*corev1.Node, error) {
	node := NewHypotheticalNode(t)
	if err := s.ReplaceNode(node); err != nil {
		return nil, fmt.Errorf("replacing hypothetical node: %w", err)
	}
	s.SetCSINode(t.Name, NewHypotheticalCSINode(t))
	s.SetResourceSlices(t.Name, NewHypotheticalResourceSlices(t))
	return node, nil
}
