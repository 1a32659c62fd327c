package conditions

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestReady(t *testing.T) {
	deps := []string{"A", "B"}
	tests := []struct {
		name                  string
		conds                 []metav1.Condition
		status                metav1.ConditionStatus
		wantReason, wantMessg string
	}{
		{name: "all true", conds: []metav1.Condition{{Type: "A", Status: "True"}, {Type: "B", Status: "True"}}, status: "True", wantReason: "Ready"},
		{name: "one unset", conds: []metav1.Condition{{Type: "A", Status: "True"}}, status: "Unknown", wantReason: "AwaitingReconciliation", wantMessg: "B is not set"},
		{name: "first false wins", conds: []metav1.Condition{{Type: "A", Status: "False", Reason: "NoA", Message: "a is gone"}, {Type: "B", Status: "False", Reason: "NoB"}},
			status: "False", wantReason: "NoA", wantMessg: "A=False: a is gone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, reason, message := Ready(tt.conds, deps, "Ready")
			if status != tt.status || reason != tt.wantReason || message != tt.wantMessg {
				t.Errorf("Ready = %s, %q, %q; want %s, %q, %q", status, reason, message, tt.status, tt.wantReason, tt.wantMessg)
			}
		})
	}
}
