package repair

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/joinery-dev/joinery/apis"
	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/controller/state"
)

func TestAllowed(t *testing.T) {
	for _, tt := range []struct {
		unhealthy, total int
		want             bool
	}{
		{1, 1, true}, // ceil(20% of 1) = 1
		{1, 5, true},
		{2, 5, false},
		{2, 6, true}, // ceil(1.2) = 2
		{3, 10, false},
		{0, 0, true},
	} {
		if got := Allowed(tt.unhealthy, tt.total); got != tt.want {
			t.Errorf("Allowed(%d, %d) = %t, want %t", tt.unhealthy, tt.total, got, tt.want)
		}
	}
}

// provider serves the seeds' policies table.
type provider struct{ cloudprovider.CloudProvider }

func (provider) RepairPolicies() []cloudprovider.RepairPolicy {
	return append(cloudprovider.KubeletRepairPolicies(), cloudprovider.NodeMonitoringAgentRepairPolicies()...)
}

func TestReconcile(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	type nodeSpec struct {
		condition corev1.NodeConditionType
		status    corev1.ConditionStatus
		since     time.Duration // before now
	}
	healthy := nodeSpec{corev1.NodeReady, corev1.ConditionTrue, time.Hour}
	tests := []struct {
		name        string
		target      nodeSpec
		others      []nodeSpec // same NodePool
		toleration  time.Duration
		wantDeleted bool
		wantRequeue time.Duration
	}{
		{name: "Ready Unknown for 31m: repaired", target: nodeSpec{corev1.NodeReady, corev1.ConditionUnknown, 31 * time.Minute}, others: []nodeSpec{healthy, healthy, healthy, healthy}, wantDeleted: true},
		{name: "Ready False for 30m: repaired", target: nodeSpec{corev1.NodeReady, corev1.ConditionFalse, 30 * time.Minute}, wantDeleted: true},
		{name: "Ready False for 20m: wait 10m more", target: nodeSpec{corev1.NodeReady, corev1.ConditionFalse, 20 * time.Minute}, wantRequeue: 10 * time.Minute},
		{name: "AcceleratedHardwareReady False for 10m: repaired", target: nodeSpec{"AcceleratedHardwareReady", corev1.ConditionFalse, 10 * time.Minute}, wantDeleted: true},
		{name: "StorageReady False for 10m: not yet (30m)", target: nodeSpec{"StorageReady", corev1.ConditionFalse, 10 * time.Minute}, wantRequeue: 20 * time.Minute},
		{name: "KernelReady True: healthy", target: nodeSpec{"KernelReady", corev1.ConditionTrue, time.Hour}},
		{name: "shortened toleration", target: nodeSpec{corev1.NodeReady, corev1.ConditionUnknown, 20 * time.Second}, toleration: 15 * time.Second, wantDeleted: true},
		{name: "2 of 5 unhealthy (over 20%): not repaired", target: nodeSpec{corev1.NodeReady, corev1.ConditionUnknown, time.Hour},
			others: []nodeSpec{{corev1.NodeReady, corev1.ConditionFalse, time.Minute}, healthy, healthy, healthy}, wantRequeue: time.Minute},
		{name: "2 of 6 unhealthy (within 20% rounded up): repaired", target: nodeSpec{corev1.NodeReady, corev1.ConditionUnknown, time.Hour},
			others: []nodeSpec{{corev1.NodeReady, corev1.ConditionFalse, time.Minute}, healthy, healthy, healthy, healthy}, wantDeleted: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			_ = clientgoscheme.AddToScheme(scheme)
			_ = apis.AddToScheme(scheme)
			var objs []client.Object
			mk := func(i int, s nodeSpec) {
				name := fmt.Sprintf("n%d", i)
				objs = append(objs,
					&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}},
						Spec:   corev1.NodeSpec{ProviderID: "kwok://" + name},
						Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: s.condition, Status: s.status, LastTransitionTime: metav1.NewTime(now.Add(-s.since))}}}},
					&karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}, Finalizers: []string{karpv1.TerminationFinalizer}},
						Status: karpv1.NodeClaimStatus{ProviderID: "kwok://" + name, NodeName: name}})
			}
			mk(0, tt.target)
			for i, o := range tt.others {
				mk(i+1, o)
			}
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&karpv1.NodeClaim{}).
				WithIndex(&karpv1.NodeClaim{}, state.NodeClaimProviderIDField, state.NodeClaimProviderID).Build()
			rec := events.NewFakeRecorder(10)
			ctrl := New(c, provider{}, rec, clocktesting.NewFakePassiveClock(now), Options{Toleration: tt.toleration})
			res, err := ctrl.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Name: "n0"}})
			if err != nil {
				t.Fatal(err)
			}
			nc := &karpv1.NodeClaim{}
			if err := c.Get(context.Background(), client.ObjectKey{Name: "n0"}, nc); err != nil {
				t.Fatal(err)
			}
			if deleted := nc.DeletionTimestamp != nil; deleted != tt.wantDeleted {
				t.Errorf("deleted = %t, want %t", deleted, tt.wantDeleted)
			}
			// forceful: the termination deadline is now, so the drain does not wait
			if got, want := nc.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey], now.Format(time.RFC3339); tt.wantDeleted && got != want {
				t.Errorf("termination timestamp = %q, want %q", got, want)
			}
			if res.RequeueAfter != tt.wantRequeue {
				t.Errorf("requeue = %s, want %s", res.RequeueAfter, tt.wantRequeue)
			}
		})
	}
}
