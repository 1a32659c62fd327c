package lifecycle

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

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
