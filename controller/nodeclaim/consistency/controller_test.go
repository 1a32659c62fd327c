package consistency

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/controller/nodeclaim/internal/fixtures"
)

var dedicated = corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}

// pair is an initialized NodeClaim and the Node it registered, consistent with each other.
func pair() (*karpv1.NodeClaim, *corev1.Node) {
	nc := fixtures.NodeClaim("nc")
	nc.Labels[corev1.LabelInstanceTypeStable] = "small"
	nc.Spec.Taints = []corev1.Taint{dedicated}
	nc.Status.ProviderID = "kwok://nc"
	nc.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("110")}
	nc.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.Now()}}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-nc", Labels: map[string]string{karpv1.NodePoolLabelKey: "default", corev1.LabelInstanceTypeStable: "small", karpv1.NodeRegisteredLabelKey: "true"}},
		Spec:       corev1.NodeSpec{ProviderID: "kwok://nc", Taints: []corev1.Taint{dedicated}},
		Status:     corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("3900Mi"), corev1.ResourcePods: resource.MustParse("110")}},
	}
	return nc, node
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name   string
		change func(nc *karpv1.NodeClaim, node *corev1.Node)
		want   []string // substrings, one per issue; none: consistent
	}{
		{name: "consistent (memory a little under, within 10%)", change: func(*karpv1.NodeClaim, *corev1.Node) {}},
		{name: "label missing on the node", change: func(_ *karpv1.NodeClaim, n *corev1.Node) {
			delete(n.Labels, corev1.LabelInstanceTypeStable)
		}, want: []string{"label node.kubernetes.io/instance-type=small"}},
		{name: "label changed on the node", change: func(_ *karpv1.NodeClaim, n *corev1.Node) {
			n.Labels[karpv1.NodePoolLabelKey] = "other"
		}, want: []string{`label karpenter.sh/nodepool=default is "other"`}},
		{name: "taint removed from the node", change: func(_ *karpv1.NodeClaim, n *corev1.Node) {
			n.Spec.Taints = nil
		}, want: []string{"taint dedicated=gpu:NoSchedule missing"}},
		{name: "startup taints may go", change: func(nc *karpv1.NodeClaim, _ *corev1.Node) {
			nc.Spec.StartupTaints = []corev1.Taint{{Key: "startup", Effect: corev1.TaintEffectNoSchedule}}
		}},
		{name: "cpu capacity far below the promise", change: func(_ *karpv1.NodeClaim, n *corev1.Node) {
			n.Status.Capacity[corev1.ResourceCPU] = resource.MustParse("1")
		}, want: []string{"expected 2 of resource cpu, but found 1 (50.0% of expected)"}},
		{name: "two issues", change: func(_ *karpv1.NodeClaim, n *corev1.Node) {
			n.Spec.Taints = nil
			n.Status.Capacity[corev1.ResourcePods] = resource.MustParse("10")
		}, want: []string{"taint dedicated", "resource pods"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc, node := pair()
			tt.change(nc, node)
			got := Check(nc, node)
			if len(got) != len(tt.want) {
				t.Fatalf("issues %q, want %d like %q", got, len(tt.want), tt.want)
			}
			for i := range got {
				if !strings.Contains(got[i], tt.want[i]) {
					t.Errorf("issue %q, want it to contain %q", got[i], tt.want[i])
				}
			}
		})
	}
}

// TestReconcile: the condition follows the node, and a failed check is a Warning event.
func TestReconcile(t *testing.T) {
	ctx := context.Background()
	nc, node := pair()
	c := fixtures.NewClient(t, nc, node)
	recorder := events.NewFakeRecorder(10)
	ctl := New(c, recorder)
	reconcile := func() *metav1.Condition {
		t.Helper()
		if _, err := ctl.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(nc)}); err != nil {
			t.Fatal(err)
		}
		fixtures.Get(t, c, nc)
		return meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeConsistentStateFound)
	}
	if cond := reconcile(); cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != ReasonConsistent {
		t.Fatalf("condition %+v, want True/%s", cond, ReasonConsistent)
	}
	fixtures.Get(t, c, node)
	node.Spec.Taints = nil
	if err := c.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	if cond := reconcile(); cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != ReasonInconsistent || !strings.Contains(cond.Message, "taint dedicated") {
		t.Fatalf("condition %+v, want False/%s naming the taint", cond, ReasonInconsistent)
	}
	if got := fixtures.Drain(recorder.Events); len(got) != 1 || !strings.Contains(got[0], "Warning "+EventFailedConsistency) {
		t.Errorf("events %q, want one Warning %s", got, EventFailedConsistency)
	}
	// Unchanged: no second write, no second event.
	reconcile()
	if got := fixtures.Drain(recorder.Events); len(got) != 0 {
		t.Errorf("events %q on an unchanged failed check, want none", got)
	}
}

// TestReconcileWaitsForInitialization: a NodeClaim whose node has not initialized is not judged.
func TestReconcileWaitsForInitialization(t *testing.T) {
	nc, node := pair()
	nc.Status.Conditions = nil
	c := fixtures.NewClient(t, nc, node)
	if _, err := New(c, events.NewFakeRecorder(1)).Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(nc)}); err != nil {
		t.Fatal(err)
	}
	fixtures.Get(t, c, nc)
	if cond := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeConsistentStateFound); cond != nil {
		t.Errorf("condition %+v on an uninitialized nodeclaim, want none", cond)
	}
}
