package lifecycle

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/controller/nodeclaim/internal/fixtures"
)

// TestRegistrationTimeoutWithUnregistrableNodes: a NodeClaim whose node exists but cannot be
// registered — an admission policy refuses the node's registration, or two nodes claim its
// provider ID — is deleted once the registration TTL is over, as if no node had appeared.
func TestRegistrationTimeoutWithUnregistrableNodes(t *testing.T) {
	const providerID = "kwok://late"
	node := func(name string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
	}
	refuseNodePatches := func(refusal error) interceptor.Funcs {
		return interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*corev1.Node); ok {
				return refusal
			}
			return c.Patch(ctx, obj, patch, opts...)
		}}
	}
	nodes := schema.GroupResource{Resource: "nodes"}
	tests := []struct {
		name  string
		nodes []client.Object
		funcs interceptor.Funcs
		// wantErrBefore: before the TTL, the reconcile fails (and is retried with backoff);
		// otherwise it looks again no later than wantRequeue.
		wantErrBefore bool
		wantRequeue   time.Duration
		// wantReason is the Registered condition's reason before the TTL, if checked.
		wantReason string
	}{
		{
			name:  "node refuses registration",
			nodes: []client.Object{node("late")}, funcs: refuseNodePatches(apierrors.NewForbidden(nodes, "late", errRefused)),
			wantRequeue: registrationRetryInterval, wantReason: reasonNotRegistered,
		},
		{
			name:  "conflicting node update is retried at once",
			nodes: []client.Object{node("late")}, funcs: refuseNodePatches(apierrors.NewConflict(nodes, "late", errRefused)),
			wantErrBefore: true,
		},
		{
			name:  "two nodes with the provider ID",
			nodes: []client.Object{node("late"), node("late-twin")}, wantRequeue: 5 * time.Minute, wantReason: reasonMultipleNodes,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc := fixtures.NodeClaim("late")
			nc.Finalizers = []string{karpv1.TerminationFinalizer}
			nc.Status.ProviderID = providerID
			nc.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionTrue, Reason: "Launched", LastTransitionTime: metav1.NewTime(epoch)}}
			h := newHarness(t)
			c := fixtures.NewClientBuilder(t, append([]client.Object{nc}, tt.nodes...)...).WithInterceptorFuncs(tt.funcs).Build()
			h.client = c
			h.controller = New(c, h.provider, h.unavailable, h.events, Options{RegistrationTTL: 15 * time.Minute, Clock: h.clock})

			h.clock.SetTime(epoch.Add(10 * time.Minute))
			result, err := h.reconcile(t, nc.Name)
			if (err != nil) != tt.wantErrBefore {
				t.Fatalf("before the TTL: Reconcile error = %v, want error %t", err, tt.wantErrBefore)
			}
			if !tt.wantErrBefore && result.RequeueAfter != tt.wantRequeue {
				t.Errorf("before the TTL: requeue after %s, want %s", result.RequeueAfter, tt.wantRequeue)
			}
			fixtures.Get(t, c, nc)
			if nc.DeletionTimestamp != nil {
				t.Fatal("nodeclaim deleted before the registration TTL")
			}

			if tt.wantReason != "" {
				if cond := condition(t, nc, karpv1.ConditionTypeRegistered); cond.Reason != tt.wantReason {
					t.Errorf("Registered reason = %s (%s), want %s", cond.Reason, cond.Message, tt.wantReason)
				}
			}

			h.clock.SetTime(epoch.Add(15 * time.Minute))
			h.mustReconcile(t, nc.Name)
			fixtures.Get(t, c, nc)
			if nc.DeletionTimestamp == nil {
				t.Error("nodeclaim not deleted after the registration TTL")
			}
			wantEvents(t, eventsOfReason(fixtures.Drain(h.events.Events), "RegistrationTimeout"),
				"Warning RegistrationTimeout Node with provider ID kwok://late did not register within 15m0s")
		})
	}
}

var errRefused = errors.New("denied by admission policy")

// eventsOfReason keeps the events whose reason (the second word) is reason.
func eventsOfReason(events []string, reason string) []string {
	var out []string
	for _, e := range events {
		if fields := strings.Fields(e); len(fields) > 1 && fields[1] == reason {
			out = append(out, e)
		}
	}
	return out
}
