package solver

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
)

// ebsClaims makes, for each of pods, perPod unbound claims of a WaitForFirstConsumer
// StorageClass the EBS CSI driver provisions, and mounts them.
func ebsClaims(pods []*corev1.Pod, perPod int) []runtime.Object {
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	objects := []runtime.Object{&storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: "ebs"},
		Provisioner:       cloudprovider.EBSCSIDriver,
		VolumeBindingMode: &mode,
	}}
	for _, p := range pods {
		for i := range perPod {
			name := fmt.Sprintf("%s-data-%d", p.Name, i)
			objects = append(objects, claimOf(name, "ebs"))
			mountingClaim(name)(p)
		}
	}
	return objects
}

// TestVolumeLimitsSizeTheNodes: each planned NodeClaim's instance types attach the CSI
// volumes planned onto it. On main every pod went onto one node (no CSINode: unlimited).
func TestVolumeLimitsSizeTheNodes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		types  []string
		pods   int
		perPod int
		want   int
	}{
		// c5.large attaches 26 volumes: one pod of 20 per node.
		{name: "20 volumes a pod on c5.large", types: []string{"c5.large"}, pods: 4, perPod: 20, want: 4},
		// Two pods of 10 fit 26, three do not.
		{name: "10 volumes a pod on c5.large", types: []string{"c5.large"}, pods: 5, perPod: 10, want: 3},
		// m7i.large has a dedicated limit of 32 (31 after the root volume): two pods of 15 fit
		// there and not on c5.large, so a NodeClaim holding two keeps m7i.large only.
		{name: "the dedicated limit of m7i.large", types: []string{"c5.large", "m7i.large"}, pods: 4, perPod: 15, want: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := &StaticState{NodePoolList: []*karpv1.NodePool{nodePool("default", requiring(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, nil, tc.types...))}}
			batch := pods(tc.pods, "db", "100m", "128Mi")
			objects := ebsClaims(batch, tc.perPod)
			plan := planAndVerify(t, state, objects, batch)
			wantClaims(t, plan, tc.want)
			if len(plan.Unschedulable) > 0 {
				t.Fatalf("unschedulable: %v", plan.Unschedulable)
			}
			its := kwokTypes(t)
			for _, c := range plan.NewNodeClaims {
				volumes := int32(len(c.Pods) * tc.perPod)
				for _, name := range instanceTypes(c.NodeClaim) {
					for _, it := range its {
						if it.Name == name && it.VolumeLimits[cloudprovider.EBSCSIDriver] < volumes {
							t.Errorf("nodeclaim with %d volumes lists %s, which attaches %d", volumes, name, it.VolumeLimits[cloudprovider.EBSCSIDriver])
						}
					}
				}
			}
		})
	}
}
