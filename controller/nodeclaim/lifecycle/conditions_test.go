package lifecycle

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

func TestSummarizeReady(t *testing.T) {
	type state struct {
		status metav1.ConditionStatus
		reason string
	}
	tests := []struct {
		name                           string
		launched, registered, initDone state
		wantStatus                     metav1.ConditionStatus
		wantReason                     string
	}{
		{"all true", state{"True", "Launched"}, state{"True", "Registered"}, state{"True", "Initialized"}, "True", "Ready"},
		{"first unknown", state{"True", "Launched"}, state{"Unknown", "NodeNotFound"}, state{"Unknown", "NotRegistered"}, "Unknown", "NodeNotFound"},
		{"false beats unknown", state{"Unknown", "A"}, state{"False", "MultipleNodesFound"}, state{"Unknown", "B"}, "False", "MultipleNodesFound"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc := &karpv1.NodeClaim{}
			nc.Generation = 3
			s := conditionSetter{nodeClaim: nc, now: metav1.Now()}
			s.set(karpv1.ConditionTypeLaunched, tt.launched.status, tt.launched.reason, "")
			s.set(karpv1.ConditionTypeRegistered, tt.registered.status, tt.registered.reason, "")
			s.set(karpv1.ConditionTypeInitialized, tt.initDone.status, tt.initDone.reason, "")
			s.summarizeReady()
			ready := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeReady)
			if ready.Status != tt.wantStatus || ready.Reason != tt.wantReason || ready.ObservedGeneration != 3 {
				t.Errorf("Ready = %s (%s) gen %d, want %s (%s) gen 3", ready.Status, ready.Reason, ready.ObservedGeneration, tt.wantStatus, tt.wantReason)
			}
		})
	}
}

func TestTransitions(t *testing.T) {
	before := []metav1.Condition{
		{Type: karpv1.ConditionTypeLaunched, Status: "Unknown"},
		{Type: karpv1.ConditionTypeRegistered, Status: "Unknown"},
	}
	after := []metav1.Condition{
		{Type: karpv1.ConditionTypeLaunched, Status: "True", Reason: "Launched"},
		{Type: karpv1.ConditionTypeRegistered, Status: "Unknown", Reason: "NodeNotFound"}, // reason only: no event
		{Type: karpv1.ConditionTypeInitialized, Status: "Unknown"},                        // new as Unknown: no event
		{Type: karpv1.ConditionTypeReady, Status: "False", Reason: "X"},                   // new as False: Unknown -> False
		{Type: karpv1.ConditionTypeDrifted, Status: "True"},                               // not a lifecycle condition
	}
	got := transitions(before, after)
	want := []transition{
		{condType: karpv1.ConditionTypeLaunched, from: "Unknown", to: "True", reason: "Launched"},
		{condType: karpv1.ConditionTypeReady, from: "Unknown", to: "False", reason: "X"},
	}
	if len(got) != len(want) {
		t.Fatalf("transitions = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("transition %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
