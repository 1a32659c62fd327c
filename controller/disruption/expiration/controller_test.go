package expiration

import (
	"context"
	"testing"
	"time"

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
)

func TestReconcile(t *testing.T) {
	created := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name         string
		expireAfter  karpv1.NillableDuration
		doNotDisrupt bool
		now          time.Time
		wantDeleted  bool
		wantRequeue  time.Duration
	}{
		{name: "not yet expired: look again when it is", expireAfter: karpv1.DurationOf(30 * time.Second), now: created.Add(10 * time.Second), wantRequeue: 20 * time.Second},
		{name: "expired: deleted", expireAfter: karpv1.DurationOf(30 * time.Second), now: created.Add(30 * time.Second), wantDeleted: true},
		{name: "do-not-disrupt does not stop expiration", expireAfter: karpv1.DurationOf(time.Minute), doNotDisrupt: true, now: created.Add(time.Hour), wantDeleted: true},
		{name: "Never", expireAfter: karpv1.NeverDuration(), now: created.Add(10000 * time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			_ = clientgoscheme.AddToScheme(scheme)
			_ = apis.AddToScheme(scheme)
			nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "a", CreationTimestamp: metav1.NewTime(created)}}
			nc.Spec.ExpireAfter = tt.expireAfter
			if tt.doNotDisrupt {
				nc.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
			}
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(nc).Build()
			rec := events.NewFakeRecorder(10)
			ctrl := New(c, rec, clocktesting.NewFakePassiveClock(tt.now), nil)
			res, err := ctrl.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Name: "a"}})
			if err != nil {
				t.Fatal(err)
			}
			err = c.Get(context.Background(), client.ObjectKey{Name: "a"}, &karpv1.NodeClaim{})
			if deleted := err != nil; deleted != tt.wantDeleted {
				t.Errorf("deleted = %t, want %t", deleted, tt.wantDeleted)
			}
			if res.RequeueAfter != tt.wantRequeue {
				t.Errorf("requeue = %s, want %s", res.RequeueAfter, tt.wantRequeue)
			}
			if tt.wantDeleted && len(rec.Events) != 1 {
				t.Errorf("events = %d, want 1 DisruptionTerminating", len(rec.Events))
			}
		})
	}
}
