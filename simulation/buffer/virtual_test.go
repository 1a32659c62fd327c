package buffer

import (
	"maps"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	autoscalingv1alpha1 "github.com/joinery-dev/joinery/apis/autoscaling/v1alpha1"
	"github.com/joinery-dev/joinery/simulation"
)

func testBuffer(name string, ready bool, replicas int32) *autoscalingv1alpha1.CapacityBuffer {
	status := metav1.ConditionFalse
	if ready {
		status = metav1.ConditionTrue
	}
	return &autoscalingv1alpha1.CapacityBuffer{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team", UID: types.UID("uid-" + name)},
		Status: autoscalingv1alpha1.CapacityBufferStatus{
			Replicas:       &replicas,
			PodTemplateRef: &autoscalingv1alpha1.LocalObjectRef{Name: "tpl"},
			Conditions:     []metav1.Condition{{Type: autoscalingv1alpha1.ConditionTypeReadyForProvisioning, Status: status}},
		},
	}
}

func testTemplate() *corev1.PodTemplate {
	return &corev1.PodTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "tpl", Namespace: "team"},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{
				NodeName:        "somewhere",
				SchedulingGates: []corev1.PodSchedulingGate{{Name: "wait"}},
				Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
					Requests: list("cpu", "500m"), Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}},
				ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu"}},
				Volumes: []corev1.Volume{
					{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
					{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
					{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				},
			},
		},
	}
}

func TestVirtualPods(t *testing.T) {
	b := testBuffer("web", true, 3)
	pt := testTemplate()
	pods := VirtualPods(b, &pt.Template, 3)
	again := VirtualPods(b, &pt.Template, 3)
	if len(pods) != 3 {
		t.Fatalf("got %d pods, want 3", len(pods))
	}
	uids := sets.New[string]()
	for i, p := range pods {
		uids.Insert(string(p.UID))
		if p.UID != again[i].UID {
			t.Errorf("pod %d: UID %s then %s; want deterministic UIDs", i, p.UID, again[i].UID)
		}
		if len(p.UID) != 36 || p.UID[14] != '5' {
			t.Errorf("pod %d: UID %q is not a version-5 UUID", i, p.UID)
		}
		if !IsVirtual(p) || Of(p) != "team/web" {
			t.Errorf("pod %d is not marked as a virtual pod of team/web: %v", i, p.Annotations)
		}
		if p.Namespace != "team" || p.Labels["app"] != "web" {
			t.Errorf("pod %d: namespace %q labels %v; want the template's", i, p.Namespace, p.Labels)
		}
		if p.Spec.NodeName != "" || len(p.Spec.SchedulingGates) != 0 || len(p.Spec.ResourceClaims) != 0 || len(p.Spec.Containers[0].Resources.Claims) != 0 {
			t.Errorf("pod %d keeps a node name, gates or resource claims: %+v", i, p.Spec)
		}
		if len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].Name != "cache" {
			t.Errorf("pod %d volumes %v; want only the emptyDir", i, p.Spec.Volumes)
		}
	}
	if uids.Len() != 3 {
		t.Errorf("UIDs are not unique: %v", uids)
	}
	if len(pt.Template.Spec.Volumes) != 3 || pt.Template.Spec.NodeName == "" {
		t.Error("VirtualPods changed the template")
	}
	if simulation.EquivalenceKey(pods[0]) != simulation.EquivalenceKey(pods[2]) {
		t.Error("a buffer's virtual pods are not one equivalence class")
	}
	other := testBuffer("other", true, 1)
	other.UID = "another"
	if VirtualPods(other, &pt.Template, 1)[0].UID == pods[0].UID {
		t.Error("two buffers share a virtual pod UID")
	}
}

func TestFromStatus(t *testing.T) {
	pt := testTemplate()
	get := func(ns, name string) *corev1.PodTemplate {
		if ns == "team" && name == "tpl" {
			return pt
		}
		return nil
	}
	standby := "example.com/standby"
	strategy := testBuffer("standby", true, 2)
	strategy.Spec.ProvisioningStrategy = &standby
	missing := testBuffer("missing", true, 2)
	missing.Status.PodTemplateRef.Name = "gone"
	buffers := []*autoscalingv1alpha1.CapacityBuffer{
		testBuffer("b", true, 2), testBuffer("a", true, 1), testBuffer("not-ready", false, 4),
		testBuffer("zero", true, 0), strategy, missing,
	}
	pods := FromStatus(buffers, get)
	var got []string
	for _, p := range pods {
		got = append(got, p.Name)
	}
	want := []string{"capacitybuffer-a-0", "capacitybuffer-b-0", "capacitybuffer-b-1"}
	if len(got) != len(want) {
		t.Fatalf("FromStatus = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("FromStatus = %v, want %v", got, want)
		}
	}
}

// TestFromStatusCapsVirtualPods (issue 26, item 3): whatever the buffers' replicas, one pass
// builds at most MaxVirtualPods, oldest buffer first; the buffer that reaches the cap gets
// what is left, newer ones none. A buffer cut by the cap (ReadyForProvisioning=False,
// VirtualPodCapExceeded) is still provisioned as far as the cap allows.
func TestFromStatusCapsVirtualPods(t *testing.T) {
	pt := testTemplate()
	get := func(string, string) *corev1.PodTemplate { return pt }
	at := func(b *autoscalingv1alpha1.CapacityBuffer, minute int) *autoscalingv1alpha1.CapacityBuffer {
		b.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 1, 0, minute, 0, 0, time.UTC))
		return b
	}
	cut := func(b *autoscalingv1alpha1.CapacityBuffer) *autoscalingv1alpha1.CapacityBuffer {
		b.Status.Conditions[0].Status, b.Status.Conditions[0].Reason = metav1.ConditionFalse, ReasonVirtualPodCapExceeded
		return b
	}
	cases := []struct {
		name    string
		buffers []*autoscalingv1alpha1.CapacityBuffer
		want    map[string]int
	}{
		{"exactly the cap", []*autoscalingv1alpha1.CapacityBuffer{at(testBuffer("a", true, MaxVirtualPods), 0)}, map[string]int{"a": MaxVirtualPods}},
		{"one buffer of 2^31-1", []*autoscalingv1alpha1.CapacityBuffer{at(testBuffer("huge", true, math.MaxInt32), 0)}, map[string]int{"huge": MaxVirtualPods}},
		{"the oldest first, whatever the names", []*autoscalingv1alpha1.CapacityBuffer{
			at(testBuffer("a-newest", true, 600), 2), at(testBuffer("z-oldest", true, 700), 0), at(cut(testBuffer("m-middle", true, 500)), 1),
		}, map[string]int{"z-oldest": 700, "m-middle": 300}},
		{"below the cap nothing is cut", []*autoscalingv1alpha1.CapacityBuffer{
			at(testBuffer("a", true, 400), 0), at(testBuffer("b", true, 599), 1),
		}, map[string]int{"a": 400, "b": 599}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]int{}
			for _, pod := range FromStatus(tc.buffers, get) {
				got[strings.TrimPrefix(Of(pod), "team/")]++
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("virtual pods per buffer %v, want %v", got, tc.want)
			}
			for _, b := range tc.buffers {
				granted, _ := Share(tc.buffers, b, *b.Status.Replicas)
				if int(granted) != tc.want[b.Name] {
					t.Errorf("Share(%s) = %d, want %d as FromStatus builds", b.Name, granted, tc.want[b.Name])
				}
			}
		})
	}
}
