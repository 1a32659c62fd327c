package provisioning

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/e2e/framework"
	"github.com/joinery-dev/joinery/simulation"
)

// TestVolumeAttachLimitsPlanEnoughNodesInOneRound (issue 27, part 1): a StatefulSet whose pods
// each mount many EBS volumes (WaitForFirstConsumer claims of ebs.csi.aws.com) gets, in one
// provisioning round, as many nodes as the EBS CSI driver's attach limit on the instance type
// implies — the NodeVolumeLimits Filter sees the CSINode a new node will report — and the
// plan is what kube-scheduler binds: every pod runs on the node of the one NodeClaim planned
// for it. The local cluster's EBS CSI stand-in publishes each kwok node's CSINode with the
// driver's limit and provisions the claims. Without a CSINode on hypothetical nodes the plan
// puts every pod on one node (cpu alone allows it), kube-scheduler binds only as many as the
// real node's CSINode allows, and the rest are planned onto more NodeClaims, round after round.
func TestVolumeAttachLimitsPlanEnoughNodesInOneRound(t *testing.T) {
	const (
		instanceType = "c5.large" // Nitro, no instance store: the driver reports 28 − 1 ENI − 1 root = 26
		claimsPerPod = 10
		replicas     = 5
	)
	limit := int(cloudprovider.EBSVolumeLimit(cloudprovider.EBSFacts{Name: instanceType}))
	perNode := limit / claimsPerPod
	wantNodes := (replicas + perNode - 1) / perNode
	t.Logf("%s attaches %d EBS volumes: %d pods of %d volumes per node, %d nodes for %d pods", instanceType, limit, perNode, claimsPerPod, wantNodes, replicas)

	pool := framework.UniqueName("volumes")
	createGroupNodePool(t, pool, nodePool{name: pool, instanceTypes: []string{instanceType}})
	ns := env.Namespace(t)
	class := ebsStorageClass(t, pool)
	createVolumeStatefulSet(t, ns, pool, class, replicas, claimsPerPod)
	// The StatefulSet controller creates pods and their claims one after another, seconds
	// apart on a loaded machine; held by a scheduling gate until all exist, they are planned
	// as one batch, as a StatefulSet's pods are when its claims already exist.
	selector := framework.GroupLabel + "=" + pool
	gated := env.AwaitPods(t, ns, selector, replicas, runningTimeout, func(pod corev1.Pod) error {
		if len(pod.Spec.SchedulingGates) == 0 {
			return fmt.Errorf("pod %s is not gated", pod.Name)
		}
		return nil
	})
	for _, pod := range gated {
		ungate(t, ns, pod.Name)
	}

	pods := env.AwaitPods(t, ns, selector, replicas, runningTimeout, running)
	claims := nodeClaimsOf(t, pool)
	// The plan: which NodeClaim each pod was planned onto, and that NodeClaim's node.
	plannedOn := map[string][]string{}
	nodeOf := map[string]string{}
	for _, nc := range claims {
		nodeOf[nc.GetName()], _, _ = unstructured.NestedString(nc.Object, "status", "nodeName")
		for _, uid := range strings.Split(nc.GetAnnotations()[simulation.PlannedPodsAnnotationKey], ",") {
			if uid = strings.TrimSpace(uid); uid != "" {
				plannedOn[uid] = append(plannedOn[uid], nc.GetName())
			}
		}
	}
	if len(claims) != wantNodes {
		t.Errorf("%d NodeClaims for %d pods of %d volumes on %s, want %d (planned: %v)", len(claims), replicas, claimsPerPod, instanceType, wantNodes, plannedOn)
	}
	podsOn := map[string]int{}
	for _, pod := range pods {
		podsOn[pod.Spec.NodeName]++
		planned := plannedOn[string(pod.UID)]
		if len(planned) != 1 {
			t.Errorf("pod %s was planned onto %d NodeClaims %v, want 1: the plan and the scheduler disagreed", pod.Name, len(planned), planned)
			continue
		}
		if node := nodeOf[planned[0]]; node != pod.Spec.NodeName {
			t.Errorf("pod %s runs on %s, planned onto NodeClaim %s of node %q", pod.Name, pod.Spec.NodeName, planned[0], node)
		}
	}
	for node, n := range podsOn {
		if n*claimsPerPod > limit {
			t.Errorf("node %s runs %d pods with %d EBS volumes, above the attach limit %d", node, n, n*claimsPerPod, limit)
		}
	}
}

// ebsStorageClass creates a WaitForFirstConsumer StorageClass of the EBS CSI driver (the local
// cluster's stand-in provisions its claims once kube-scheduler picks their node).
func ebsStorageClass(t *testing.T, name string) string {
	t.Helper()
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: name},
		Provisioner:       cloudprovider.EBSCSIDriver,
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
	}
	if _, err := env.Client.StorageV1().StorageClasses().Create(t.Context(), sc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create storage class: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), runningTimeout)
		defer cancel()
		if err := env.Client.StorageV1().StorageClasses().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete storage class %s: %v", name, err)
		}
	})
	return name
}

// e2eGate is the scheduling gate that holds a test's pods until it removes it.
const e2eGate = "joinery.dev/e2e-hold"

// ungate removes e2eGate from the pod name.
func ungate(t *testing.T, ns, name string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pod.Spec.SchedulingGates = slices.DeleteFunc(pod.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == e2eGate })
		_, err = env.Client.CoreV1().Pods(ns).Update(t.Context(), pod, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("removing the scheduling gate of pod %s: %v", name, err)
	}
}

// createVolumeStatefulSet creates a StatefulSet of the group whose pods each mount claims
// volumes of class (their claims are deleted with the namespace, and the stand-in then
// deletes the volumes), all its pods at once, gated by e2eGate.
func createVolumeStatefulSet(t *testing.T, ns, group, class string, replicas int32, claims int) {
	t.Helper()
	labels := map[string]string{framework.GroupLabel: group, "app": "db"}
	spec := framework.GroupPodSpec(group, "100m", "128Mi")
	spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: e2eGate}}
	var templates []corev1.PersistentVolumeClaim
	for i := range claims {
		name := fmt.Sprintf("data-%d", i)
		spec.Containers[0].VolumeMounts = append(spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: name, MountPath: "/" + name})
		templates = append(templates, corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				StorageClassName: &class,
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		})
	}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas:             &replicas,
			Selector:             &metav1.LabelSelector{MatchLabels: labels},
			PodManagementPolicy:  appsv1.ParallelPodManagement,
			Template:             corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
			VolumeClaimTemplates: templates,
		},
	}
	if _, err := env.Client.AppsV1().StatefulSets(ns).Create(t.Context(), sts, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create statefulset: %v", err)
	}
}
