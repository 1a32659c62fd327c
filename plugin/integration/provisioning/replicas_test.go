package provisioning

import (
	"context"
	"fmt"
	"maps"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/internal/testpods"
)

// TestMissingReplicasPlannedWithTheFirstWave (issue 24): a ReplicaSet of six zone-spread
// replicas (maxSkew 1 over three zones) creates its pods in two waves, two then four, as the
// ReplicaSet controller's growing bursts do. The first wave's batch plans the four replicas
// not created yet too (planMissingReplicas, on by default), so its NodeClaims cover all three
// zones; the second wave lands on them, two pods per zone, and no NodeClaim is added. Without
// the missing replicas, the first batch buys two zones' NodeClaims and the second wave a third.
func TestMissingReplicasPlannedWithTheFirstWave(t *testing.T) {
	e := testEnv(t)
	ns := e.newNamespace(t)
	e.create(t, ns, nodePool("default", requires(familyLabel, corev1.NodeSelectorOpIn, nil, "c5")))
	replica := pod("template", "500m", "512Mi", labelled("app", "web"), testpods.Spread(zone, "web", corev1.DoNotSchedule))
	replicas := int32(6)
	rs, err := e.kube.AppsV1().ReplicaSets(ns).Create(t.Context(), &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-5d8f", Namespace: ns},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: testpods.AppSelector("web"),
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: replica.Labels}, Spec: replica.Spec},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the ReplicaSet: %v", err)
	}
	// No ReplicaSet controller runs here: the test creates its pods, as it would.
	wave := func(from, n int) []*corev1.Pod {
		var out []*corev1.Pod
		for i := from; i < from+n; i++ {
			p := pod(fmt.Sprintf("web-5d8f-%d", i), "500m", "512Mi", labelled("app", "web"), testpods.Spread(zone, "web", corev1.DoNotSchedule))
			p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}
			out = append(out, p)
		}
		return e.createPlainPods(t, ns, out...)
	}
	e.startKubeScheduler(t, ns)
	first := wave(0, 2)

	// The plugin creates a plan's NodeClaims one after the other: the two real pods can be
	// planned onto the first two before the third (only missing replicas) exists, so the wait
	// is for the whole plan. A first batch without the missing replicas never covers three
	// zones, and the wait times out with the zones it saw.
	var firstClaims []*karpv1.NodeClaim
	pollUntil(t, "waiting for the first wave's plan to cover all three zones (the four replicas not created yet planned with it)", func(ctx context.Context) (bool, string, error) {
		claims, err := e.nodeClaims(ctx)
		if err != nil {
			return false, err.Error(), nil
		}
		firstClaims = claims
		onto := podsPlannedOnto(claims)
		planned := 0
		for _, p := range first {
			if onto[p.UID] != nil {
				planned++
			}
		}
		zones := claimZones(claims)
		return planned == len(first) && zones.Len() == 3,
			fmt.Sprintf("%d of %d pods planned onto %d NodeClaims covering zones %v", planned, len(first), len(claims), sets.List(zones)), nil
	})
	names := sets.New[string]()
	for _, nc := range firstClaims {
		names.Insert(nc.Name)
	}

	all := append(first, wave(2, 4)...)
	pollUntil(t, "waiting for the second wave to be planned onto the first wave's NodeClaims", func(ctx context.Context) (bool, string, error) {
		claims, err := e.nodeClaims(ctx)
		if err != nil {
			return false, err.Error(), nil
		}
		for _, nc := range claims {
			if !names.Has(nc.Name) {
				return false, "", fmt.Errorf("NodeClaim %s was added for the second wave; the first wave's %v were bought for it", nc.Name, sets.List(names))
			}
		}
		onto := podsPlannedOnto(claims)
		perZone := map[string]int{}
		var waiting []string
		for _, p := range all {
			nc := onto[p.UID]
			if nc == nil {
				waiting = append(waiting, p.Name)
				continue
			}
			perZone[requirement(nc, zone).Values[0]]++
		}
		if len(waiting) > 0 {
			return false, fmt.Sprintf("not planned yet: %v", waiting), nil
		}
		if want := map[string]int{"test-zone-a": 2, "test-zone-b": 2, "test-zone-c": 2}; !maps.Equal(perZone, want) {
			return false, "", fmt.Errorf("pods per zone %v, want %v (maxSkew 1)", perZone, want)
		}
		return true, "", nil
	})
}

// claimZones is the set of zones the NodeClaims are pinned to (a single-value zone requirement).
func claimZones(claims []*karpv1.NodeClaim) sets.Set[string] {
	zones := sets.New[string]()
	for _, nc := range claims {
		if r := requirement(nc, zone); r != nil && len(r.Values) == 1 {
			zones.Insert(r.Values[0])
		}
	}
	return zones
}
