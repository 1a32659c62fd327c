package buffer

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/joinery-dev/joinery/simulation"
)

func testWorkload(name string, missing int32, template *corev1.PodTemplateSpec) Workload {
	return Workload{
		Ref:       metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name, UID: types.UID("uid-" + name)},
		Namespace: "team",
		Template:  template,
		Missing:   missing,
	}
}

func webTemplate() *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: list("cpu", "250m")}}}},
	}
}

func TestMissingReplicas(t *testing.T) {
	withClaim := webTemplate()
	withClaim.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	gated := webTemplate()
	gated.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "wait"}}
	cases := []struct {
		name      string
		workloads []Workload
		limit     int
		want      map[string]int
	}{
		{"each workload's missing replicas", []Workload{testWorkload("a", 3, webTemplate()), testWorkload("b", 2, webTemplate())}, MaxVirtualPods, map[string]int{"a": 3, "b": 2}},
		{"the limit cuts, in the workloads' order", []Workload{testWorkload("a", 3, webTemplate()), testWorkload("b", 2, webTemplate())}, 4, map[string]int{"a": 3, "b": 1}},
		{"nothing left of the cap, nothing planned", []Workload{testWorkload("a", 3, webTemplate())}, 0, map[string]int{}},
		{"a template with per-pod volumes or gates waits for its pods", []Workload{testWorkload("claim", 3, withClaim), testWorkload("gated", 3, gated), testWorkload("a", 1, webTemplate())}, MaxVirtualPods, map[string]int{"a": 1}},
		{"none missing, none planned", []Workload{testWorkload("a", 0, webTemplate()), testWorkload("b", -2, webTemplate())}, MaxVirtualPods, map[string]int{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]int{}
			for _, pod := range MissingReplicas(tc.workloads, tc.limit) {
				got[metav1.GetControllerOf(pod).Name]++
			}
			if len(got) != len(tc.want) {
				t.Fatalf("virtual pods per workload %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Fatalf("virtual pods per workload %v, want %v", got, tc.want)
				}
			}
		})
	}
}

// TestMissingReplicasAreVirtual: a missing replica is recognised as virtual by its derived UID
// alone (a real pod copying its metadata is not), is no buffer's, keeps the same UID from batch
// to batch, and shares the real replicas' equivalence class.
func TestMissingReplicasAreVirtual(t *testing.T) {
	w := testWorkload("web-7d9", 2, webTemplate())
	pods := MissingReplicas([]Workload{w}, MaxVirtualPods)
	again := MissingReplicas([]Workload{w}, MaxVirtualPods)
	for i, p := range pods {
		if !IsVirtual(p) || Of(p) != "" {
			t.Errorf("pod %d: IsVirtual %v, Of %q; want virtual and no buffer's", i, IsVirtual(p), Of(p))
		}
		if p.UID != again[i].UID {
			t.Errorf("pod %d: UID %s then %s, want deterministic", i, p.UID, again[i].UID)
		}
	}
	for i, p := range pods {
		if workload, index, ok := MissingReplicaOf(p); !ok || workload != w.Ref.UID || index != i {
			t.Errorf("pod %d: MissingReplicaOf = %s, %d, %v; want %s, %d, true", i, workload, index, ok, w.Ref.UID, i)
		}
	}
	real := pods[0].DeepCopy()
	real.UID = "random-from-the-api-server"
	if IsVirtual(real) {
		t.Error("a real pod with a missing replica's metadata counts as virtual")
	}
	if _, _, ok := MissingReplicaOf(real); ok {
		t.Error("a real pod with a missing replica's metadata counts as a missing replica")
	}
	b := testBuffer("warm", true, 1)
	if _, _, ok := MissingReplicaOf(VirtualPods(b, &testTemplate().Template, 1)[0]); ok {
		t.Error("a buffer's virtual pod counts as a missing replica")
	}
	replica := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-7d9-abcde", Namespace: "team", UID: "real", Labels: map[string]string{"app": "web"}, OwnerReferences: pods[0].OwnerReferences},
		Spec:       webTemplate().Spec,
	}
	if simulation.EquivalenceKey(replica) != simulation.EquivalenceKey(pods[1]) {
		t.Error("a missing replica is not in its real replicas' equivalence class")
	}
}

// TestMissingReplicasWithIdentity: a workload listing its replicas (a StatefulSet's ordinals,
// an Indexed Job's indexes) gets one virtual pod per replica, named and identified by its
// index, with the replica's own volumes added to the template's; the limit cuts the list.
func TestMissingReplicasWithIdentity(t *testing.T) {
	w := testWorkload("db", 0, webTemplate())
	w.Ref.Kind = "StatefulSet"
	claim := corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-db-4"}}}
	w.Replicas = []Replica{{Index: 2}, {Index: 4, Volumes: []corev1.Volume{claim}}, {Index: 7}}
	pods := MissingReplicas([]Workload{w}, 2)
	if len(pods) != 2 {
		t.Fatalf("%d virtual pods, want 2 (the limit)", len(pods))
	}
	for i, want := range []int{2, 4} {
		p := pods[i]
		if p.Name != fmt.Sprintf("db-missing-%d", want) || p.UID != ReplicaUID(w.Ref.UID, want) || !IsVirtual(p) {
			t.Errorf("pod %d: %s %s virtual %v, want replica %d's", i, p.Name, p.UID, IsVirtual(p), want)
		}
	}
	if len(pods[0].Spec.Volumes) != 0 || len(pods[1].Spec.Volumes) != 1 || pods[1].Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data-db-4" {
		t.Errorf("volumes %+v and %+v, want none and replica 4's claim", pods[0].Spec.Volumes, pods[1].Spec.Volumes)
	}
}
