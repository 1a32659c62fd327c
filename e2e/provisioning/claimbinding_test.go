package provisioning

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/e2e/framework"
)

// unboundClaimsRefusal is what VolumeBinding says of a pod whose claims are not bound yet.
const unboundClaimsRefusal = "unbound immediate PersistentVolumeClaims"

// TestPodIsPlannedOnceItsClaimBinds is issue 26's claim-binding case, end to end with the
// real PV controller: a pod mounts a claim created pre-bound (spec.volumeName) to a volume that
// does not exist yet, so VolumeBinding refuses it, in the plan as in kube-scheduler. Once the
// volume is created, kube-controller-manager completes the binding (the bind-completed
// annotation on a claim that named its volume from the start) and the pod must be planned and
// run. On a cluster with no node (this test alone) kube-scheduler answers "no nodes available"
// on every retry and never calls PostFilter: only the plugin's own trigger on the binding can
// plan the pod.
func TestPodIsPlannedOnceItsClaimBinds(t *testing.T) {
	pool := framework.UniqueName("claims")
	createGroupNodePool(t, pool, nodePool{name: pool})
	ns := env.Namespace(t)
	volume := framework.UniqueName("static")
	class := ""
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &class,
			VolumeName:       volume,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := env.Client.CoreV1().PersistentVolumeClaims(ns).Create(t.Context(), claim, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create claim: %v", err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns, Labels: map[string]string{framework.GroupLabel: pool}},
		Spec:       framework.GroupPodSpec(pool, "100m", "128Mi"),
	}
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"},
	}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	if _, err := env.Client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}

	framework.Eventually(t, runningTimeout, "the pod to be refused for its unbound claim", func(ctx context.Context) (bool, error) {
		notes, err := env.EventNotes(ctx, "FailedScheduling", pod.Name)
		if err != nil {
			return false, err
		}
		for _, note := range notes {
			if strings.Contains(note, unboundClaimsRefusal) {
				return true, nil
			}
		}
		return false, fmt.Errorf("FailedScheduling notes %q, none says %q", notes, unboundClaimsRefusal)
	})

	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: volume},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName:              class,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: cloudprovider.EBSCSIDriver, VolumeHandle: "vol-" + volume,
			}},
		},
	}
	if _, err := env.Client.CoreV1().PersistentVolumes().Create(t.Context(), pv, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create volume: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), runningTimeout)
		defer cancel()
		_ = env.Client.CoreV1().PersistentVolumes().Delete(ctx, volume, metav1.DeleteOptions{})
	})
	env.AwaitPodRunning(t, ns, pod.Name, runningTimeout)
}
