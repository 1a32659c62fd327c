package plugin

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/joinery-dev/joinery/simulation/buffer"
)

func testReplicaSet(name string, replicas int32, change ...func(*appsv1.ReplicaSet)) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{SchedulerName: "joinery", Containers: []corev1.Container{{Name: "c"}}},
			},
		},
	}
	for _, c := range change {
		c(rs)
	}
	return rs
}

// replicasOf returns n pods of rs, numbered from 0.
func replicasOf(rs *appsv1.ReplicaSet, n int, change ...func(*corev1.Pod)) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		p := testPod(rs.Namespace, fmt.Sprintf("%s-%d", rs.Name, i))
		p.Labels = map[string]string{"app": rs.Name}
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}
		for _, c := range change {
			c(p)
		}
		out = append(out, p)
	}
	return out
}

// TestMissingReplicaPods: a batch's ReplicaSets get virtual pods for the replicas they want
// and have not created, counted as the ReplicaSet controller counts (pods being deleted or
// finished are replaced); a ReplicaSet being deleted or failing to create pods gets none, and
// the virtual-pod cap left by the buffers bounds them.
func TestMissingReplicaPods(t *testing.T) {
	deleting := func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{}; p.Finalizers = []string{"x"} }
	failed := func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }
	cases := []struct {
		name  string
		rs    *appsv1.ReplicaSet
		pods  []func(*appsv1.ReplicaSet) []*corev1.Pod
		limit int
		want  int
	}{
		{"ten wanted, three created: seven planned", testReplicaSet("web", 10), []func(*appsv1.ReplicaSet) []*corev1.Pod{
			func(rs *appsv1.ReplicaSet) []*corev1.Pod { return replicasOf(rs, 3) },
		}, buffer.MaxVirtualPods, 7},
		{"pods being deleted or finished are replaced", testReplicaSet("web", 4), []func(*appsv1.ReplicaSet) []*corev1.Pod{
			func(rs *appsv1.ReplicaSet) []*corev1.Pod {
				pods := replicasOf(rs, 3)
				deleting(pods[1])
				failed(pods[2])
				return pods
			},
		}, buffer.MaxVirtualPods, 3},
		{"the cap left by the buffers bounds them", testReplicaSet("web", 10), []func(*appsv1.ReplicaSet) []*corev1.Pod{
			func(rs *appsv1.ReplicaSet) []*corev1.Pod { return replicasOf(rs, 3) },
		}, 2, 2},
		{"all created: none", testReplicaSet("web", 3), []func(*appsv1.ReplicaSet) []*corev1.Pod{
			func(rs *appsv1.ReplicaSet) []*corev1.Pod { return replicasOf(rs, 3) },
		}, buffer.MaxVirtualPods, 0},
		{"a ReplicaSet whose creations fail: none", testReplicaSet("web", 10, func(rs *appsv1.ReplicaSet) {
			rs.Status.Conditions = []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate"}}
		}), []func(*appsv1.ReplicaSet) []*corev1.Pod{
			func(rs *appsv1.ReplicaSet) []*corev1.Pod { return replicasOf(rs, 3) },
		}, buffer.MaxVirtualPods, 0},
		{"a ReplicaSet being deleted: none", testReplicaSet("web", 10, func(rs *appsv1.ReplicaSet) {
			rs.DeletionTimestamp = &metav1.Time{}
		}), []func(*appsv1.ReplicaSet) []*corev1.Pod{
			func(rs *appsv1.ReplicaSet) []*corev1.Pod { return replicasOf(rs, 3) },
		}, buffer.MaxVirtualPods, 0},
		{"a pod whose owner is a ReplicaSet of the same name but another UID: none", testReplicaSet("web", 10), []func(*appsv1.ReplicaSet) []*corev1.Pod{
			func(rs *appsv1.ReplicaSet) []*corev1.Pod {
				other := rs.DeepCopy()
				other.UID = "recreated"
				return replicasOf(other, 3)
			},
		}, buffer.MaxVirtualPods, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var pods []*corev1.Pod
			for _, build := range tc.pods {
				pods = append(pods, build(tc.rs)...)
			}
			env := newTestPlugin(t, true, pods...)
			p := env.plugin
			indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
			if err := indexer.Add(tc.rs); err != nil {
				t.Fatal(err)
			}
			p.replicaSets = appslisters.NewReplicaSetLister(indexer)
			virtual := p.missingReplicaPods(t.Context(), pods[:1], tc.limit)
			if len(virtual) != tc.want {
				t.Fatalf("%d virtual pods, want %d", len(virtual), tc.want)
			}
			for _, v := range virtual {
				if !buffer.IsVirtual(v) || buffer.Of(v) != "" || metav1.GetControllerOf(v).UID != pods[0].OwnerReferences[0].UID {
					t.Errorf("virtual pod %s: not a missing replica of the batch's ReplicaSet: %+v", v.Name, v.ObjectMeta)
				}
			}
		})
	}
}
