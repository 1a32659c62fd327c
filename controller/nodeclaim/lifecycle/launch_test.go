package lifecycle

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/controller/nodeclaim/internal/fixtures"
	"github.com/joinery-dev/joinery/simulation"
)

// TestLaunchHoldsThePodsPlannedInFlight (issue 17, defect 4): a NodeClaim's spec is immutable
// and requests what the pods it was made for need; pods the scheduler planned onto it while it
// launched are in its planned-requests annotation, and the launch takes an instance type that
// holds them too. A corrupt annotation launches the spec's requests, with a warning event.
func TestLaunchHoldsThePodsPlannedInFlight(t *testing.T) {
	cases := []struct {
		name       string
		annotation string // "" for none
		wantType   string
		wantEvent  string
	}{
		{name: "no pods added", wantType: "small"},
		{name: "pods added past the smallest type", annotation: `{"cpu":"3500m","memory":"6Gi","pods":"4"}`, wantType: "big"},
		{name: "pods added that the smallest type still holds", annotation: `{"cpu":"1500m","memory":"1Gi"}`, wantType: "small"},
		{name: "corrupt annotation", annotation: `{"cpu":`, wantType: "small", wantEvent: "Warning PlannedRequestsInvalid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nc := fixtures.NodeClaim("default-abc")
			nc.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
			if tc.annotation != "" {
				nc.Annotations = map[string]string{simulation.PlannedRequestsAnnotationKey: tc.annotation}
			}
			h := newHarness(t, nc)
			h.mustReconcile(t, nc.Name)
			fixtures.Get(t, h.client, nc)
			if got := nc.Labels[corev1.LabelInstanceTypeStable]; got != tc.wantType {
				t.Errorf("launched %q, want %q", got, tc.wantType)
			}
			var warnings []string
			for _, e := range fixtures.Drain(h.events.Events) {
				if strings.HasPrefix(e, "Warning") {
					warnings = append(warnings, e)
				}
			}
			switch {
			case tc.wantEvent == "" && len(warnings) > 0:
				t.Errorf("warnings %q, want none", warnings)
			case tc.wantEvent != "" && (len(warnings) != 1 || !strings.HasPrefix(warnings[0], tc.wantEvent) || !strings.Contains(warnings[0], simulation.PlannedRequestsAnnotationKey)):
				t.Errorf("warnings %q, want one %q naming %s", warnings, tc.wantEvent, simulation.PlannedRequestsAnnotationKey)
			}
		})
	}
}

// staleCache answers Get for one NodeClaim with a copy read earlier, as the manager's cache
// does until the watch delivers the writes since; everything else goes to the client.
type staleCache struct {
	client.Client
	stale *karpv1.NodeClaim
}

func (s *staleCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if nc, ok := obj.(*karpv1.NodeClaim); ok && key.Name == s.stale.Name {
		s.stale.DeepCopyInto(nc)
		return nil
	}
	return s.Client.Get(ctx, key, obj, opts...)
}

// TestNodeClaimLaunchedButNotYetInTheCacheIsNotLaunchedAgain (issue 24): the lifecycle writes a
// launch as metadata, then status, and the reconcile the first write queues often reads the
// cache before the second. It reads the NodeClaim from the API server before launching, so
// it neither creates the instance again nor has its status write refused as stale; in a live
// burst of 150 NodeClaims each was launched two to seven times before.
func TestNodeClaimLaunchedButNotYetInTheCacheIsNotLaunchedAgain(t *testing.T) {
	nc := fixtures.NodeClaim("default-abc")
	h := newHarness(t, nc)
	stale := nc.DeepCopy()
	fixtures.Get(t, h.client, stale)
	h.controller = New(&staleCache{Client: h.client, stale: stale}, h.provider, h.unavailable, h.events,
		Options{RegistrationTTL: 15 * time.Minute, Clock: h.clock, LiveReader: h.client})
	h.mustReconcile(t, nc.Name)
	if h.provider.Creates != 1 {
		t.Fatalf("first reconcile created %d instances, want 1", h.provider.Creates)
	}
	if _, err := h.reconcile(t, nc.Name); err != nil {
		t.Errorf("second reconcile, the cache still showing the NodeClaim unlaunched: %v", err)
	}
	if h.provider.Creates != 1 {
		t.Errorf("%d instance creations after the second reconcile, want the first one only", h.provider.Creates)
	}
}
