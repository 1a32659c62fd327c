package plugin

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

func TestFormatInstanceTypes(t *testing.T) {
	many := make([]string, 60)
	for i := range many {
		many[i] = fmt.Sprintf("t%d", i)
	}
	cases := []struct {
		names []string
		want  string
	}{
		{nil, ""},
		{[]string{"c5.large"}, "c5.large"},
		{[]string{"a", "b", "c", "d", "e"}, "a, b, c, d, e"},
		{[]string{"a", "b", "c", "d", "e", "f"}, "a, b, c, d, e and 1 other(s)"},
		{many, "t0, t1, t2, t3, t4 and 55 other(s)"},
	}
	for _, tc := range cases {
		if got := formatInstanceTypes(tc.names); got != tc.want {
			t.Errorf("formatInstanceTypes(%d names) = %q, want %q", len(tc.names), got, tc.want)
		}
	}
}

func TestStatusMessages(t *testing.T) {
	cases := []struct{ got, want string }{
		{waitingMessage("default-x7k2p"), "waiting for NodeClaim default-x7k2p"},
		{batchingMessage(3), "provisioning: batching 3 pod(s)"},
		{formatPods([]*corev1.Pod{testPod("a", "p1"), testPod("b", "p2")}), "a/p1, b/p2"},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestFilterReasons(t *testing.T) {
	nodes := []*corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "n1"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "n2"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "n3"}},
	}
	snapshot := cache.NewSnapshot(nil, nodes)
	statuses := framework.NewDefaultNodeToStatus()
	statuses.Set("n1", fwk.NewStatus(fwk.Unschedulable, "Insufficient cpu"))
	statuses.Set("n2", fwk.NewStatus(fwk.Unschedulable, "Insufficient cpu", "Insufficient memory"))
	statuses.Set("n3", fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node(s) had untolerated taint"))
	want := "1 Insufficient memory, 1 node(s) had untolerated taint, 2 Insufficient cpu"
	if got := filterReasons(statuses, snapshot.NodeInfos()); got != want {
		t.Errorf("filterReasons = %q, want %q", got, want)
	}
	if got := filterReasons(nil, snapshot.NodeInfos()); got != "" {
		t.Errorf("without statuses: %q", got)
	}
}
