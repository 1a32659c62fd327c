package simulation

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
}

// EBSZoneLabelKey is the zone label the EBS CSI driver registers on its nodes; volumes it
// provisions carry it in their node affinity.
const EBSZoneLabelKey = "topology.ebs.csi.aws.com/zone"

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
