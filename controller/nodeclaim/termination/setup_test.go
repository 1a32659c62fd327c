package termination

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// TestPodDeletionRequeuesItsNode: the Node controller looks at a draining node again when one
// of its pods is deleted, instead of at the drain's next poll; other pod events and unbound
// pods enqueue nothing.
func TestPodDeletionRequeuesItsNode(t *testing.T) {
	bound := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: corev1.PodSpec{NodeName: "node-a"}}
	unbound := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "default"}}
	tests := []struct {
		name  string
		pass  bool
		pod   *corev1.Pod
		nodes []string
	}{
		{name: "a bound pod deleted", pass: deletesOnly.Delete(event.DeleteEvent{Object: bound}), pod: bound, nodes: []string{"node-a"}},
		{name: "an unbound pod deleted", pass: deletesOnly.Delete(event.DeleteEvent{Object: unbound}), pod: unbound},
		{name: "a pod created", pass: deletesOnly.Create(event.CreateEvent{Object: bound})},
		{name: "a pod updated", pass: deletesOnly.Update(event.UpdateEvent{ObjectOld: bound, ObjectNew: bound})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if want := tt.pod != nil; tt.pass != want {
				t.Fatalf("predicate passes %t, want %t", tt.pass, want)
			}
			if tt.pod == nil {
				return
			}
			var got []string
			for _, r := range nodeOfPod(context.Background(), tt.pod) {
				got = append(got, r.Name)
			}
			if len(got) != len(tt.nodes) || (len(got) == 1 && got[0] != tt.nodes[0]) {
				t.Errorf("requeued %v, want %v", got, tt.nodes)
			}
		})
	}
}
