package simulation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func replica(name string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := testPod(name, "500m", "1Gi", labelled("app", "web"), spread(zoneLabel, "web"))
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9f", UID: "rs-1", Controller: new(true)}}
	p.Spec.Volumes = []corev1.Volume{
		{Name: "kube-api-access-" + name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}},
		{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web"}}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func TestEquivalenceKey(t *testing.T) {
	base := EquivalenceKey(replica("web-a"))
	tests := []struct {
		name string
		pod  *corev1.Pod
		same bool
	}{
		{"another replica", replica("web-b"), true},
		{"replica with a status", replica("web-c", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }), true},
		{"other owner", replica("web-b", func(p *corev1.Pod) { p.OwnerReferences[0].UID = "rs-2" }), false},
		{"other namespace", replica("web-b", func(p *corev1.Pod) { p.Namespace = "prod" }), false},
		{"other labels", replica("web-b", func(p *corev1.Pod) { p.Labels["app"] = "api" }), false},
		{"other requests", replica("web-b", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1")
		}), false},
		{"other tolerations", replica("web-b", tolerating("dedicated")), false},
		{"other node affinity", replica("web-b", requiringZone("zone-a")), false},
		{"host port", replica("web-b", hostPort(80)), false},
		{"own claim", replica("web-b", withClaim("data-web-b")), false},
		{"resource claims", replica("web-b", func(p *corev1.Pod) {
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu"}}
		}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EquivalenceKey(tt.pod) == base; got != tt.same {
				t.Fatalf("same key = %v, want %v", got, tt.same)
			}
		})
	}

	withClaims := func(uid types.UID) *corev1.Pod {
		return replica("gpu", func(p *corev1.Pod) {
			p.UID = uid
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu"}}
		})
	}
	if EquivalenceKey(withClaims("u1")) == EquivalenceKey(withClaims("u2")) {
		t.Fatal("pods with resource claims share a key")
	}
}

func TestNewHypotheticalNode(t *testing.T) {
	node := testNode("new-1", "4", "8Gi", inZone("zone-a"), withLabel("team", "data"), withTaint("dedicated", "data"))
	// The EBS CSI and the deprecated beta zone keys follow the zone, as on real nodes.
	want := map[string]string{
		zoneLabel: "zone-a", ebsZoneKey: "zone-a", corev1.LabelFailureDomainBetaZone: "zone-a",
		"team": "data", corev1.LabelHostname: "new-1",
	}
	for k, v := range want {
		if node.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, node.Labels[k], v)
		}
	}
	if len(node.Labels) != len(want) {
		t.Errorf("labels = %v, want %v", node.Labels, want)
	}
	if cpu := node.Status.Allocatable[corev1.ResourceCPU]; cpu.String() != "4" {
		t.Errorf("allocatable cpu = %s", cpu.String())
	}
	if len(node.Spec.Taints) != 1 {
		t.Errorf("taints = %v", node.Spec.Taints)
	}
}
