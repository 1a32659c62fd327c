package plugin

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	fwk "k8s.io/kube-scheduler/framework"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// TestHeldPodsRetriedWhenThePlacementMayAdmitThem (issue 24, the churn of the zone spread): a
// pod of a plan placed retries only the held pods of its plan it may let onto their nodes.
// Two pods of one workload are held on node-a1 (zone a) by their zone spread, and a third pod
// there by pod affinity, which any placement may satisfy: it is retried every time, so the
// test knows when the retries are done. A fourth pod of the plan still launches.
func TestHeldPodsRetriedWhenThePlacementMayAdmitThem(t *testing.T) {
	const zoneKey = corev1.LabelTopologyZone
	web := map[string]string{"app": "web"}
	spread := []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: zoneKey, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: web},
	}}
	cases := []struct {
		name      string
		node      string // where the placed pod lands; its NodeClaim is claim-<node>
		namespace string
		labels    map[string]string
		want      []string
	}{
		{name: "on the held pods' own node", node: "node-a1", namespace: "ns", labels: web,
			want: []string{"ns/affine"}},
		{name: "in the held pods' zone, on another node", node: "node-a2", namespace: "ns", labels: web,
			want: []string{"ns/affine"}},
		{name: "in another zone: one pod of the workload may fit now", node: "node-b", namespace: "ns", labels: web,
			want: []string{"ns/affine", "ns/held-1"}},
		{name: "in another zone, a pod their spread does not count", node: "node-b", namespace: "ns", labels: map[string]string{"app": "other"},
			want: []string{"ns/affine"}},
		{name: "in another zone, a pod of another namespace", node: "node-b", namespace: "other", labels: web,
			want: []string{"ns/affine"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			held := []*corev1.Pod{testPod("ns", "held-1"), testPod("ns", "held-2")}
			for _, pod := range held {
				pod.Labels = web
				pod.Spec.TopologySpreadConstraints = spread
			}
			affine := testPod("ns", "affine")
			placed := testPod(tc.namespace, "placed")
			placed.Labels = tc.labels
			keeper := testPod("ns", "keeper")
			env := newTestPlugin(t, true, held[0], held[1], affine, placed, keeper)
			p := env.plugin
			p.nominate(1, "claim-node-a1", append(slices.Clone(held), affine))
			p.nominate(1, "claim-"+tc.node, []*corev1.Pod{placed})
			p.nominate(1, "claim-launching", []*corev1.Pod{keeper})
			zones := map[string]string{"node-a1": "a", "node-a2": "a", "node-b": "b"}
			var nodes []*corev1.Node
			for _, node := range slices.Sorted(maps.Keys(zones)) {
				nodes = append(nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{zoneKey: zones[node]}}})
				p.observeNodeClaim(t.Context(), &karpv1.NodeClaim{
					ObjectMeta: metav1.ObjectMeta{Name: "claim-" + node},
					Status: karpv1.NodeClaimStatus{NodeName: node, Conditions: []metav1.Condition{
						{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue},
					}},
				})
			}
			p.nodeInfos = schedcache.NewSnapshot(nil, nodes).NodeInfos
			for _, pod := range append(slices.Clone(held), affine) {
				rejectedBy := names.PodTopologySpread
				if pod == affine {
					rejectedBy = names.InterPodAffinity
				}
				statuses := framework.NewDefaultNodeToStatus()
				statuses.Set("node-a1", fwk.NewStatus(fwk.Unschedulable, "rejected").WithPlugin(rejectedBy))
				p.PostFilter(t.Context(), framework.NewCycleState(), pod, statuses)
				if _, waits := p.waits.nodeClaimFor(pod.UID); !waits {
					t.Fatalf("%s is not held", pod.Name)
				}
			}
			env.activator.reset()

			p.Reserve(t.Context(), framework.NewCycleState(), placed, tc.node)
			if err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
				return slices.Contains(env.activator.keys(), "ns/affine"), nil
			}); err != nil {
				t.Fatalf("the pod held by pod affinity was not retried: %v", err)
			}
			if got := env.activator.keys(); !slices.Equal(got, tc.want) {
				t.Errorf("retried %v, want %v", got, tc.want)
			}
		})
	}
}
