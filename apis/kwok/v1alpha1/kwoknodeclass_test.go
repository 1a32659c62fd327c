package v1alpha1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestAddToScheme(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"KWOKNodeClass", "KWOKNodeClassList"} {
		if !scheme.Recognizes(SchemeGroupVersion.WithKind(kind)) {
			t.Errorf("scheme does not recognize %s/%s", SchemeGroupVersion, kind)
		}
	}
	if got := GroupVersionKind().String(); got != "karpenter.kwok.sh/v1alpha1, Kind=KWOKNodeClass" {
		t.Errorf("GroupVersionKind() = %s", got)
	}
}

func TestReady(t *testing.T) {
	tests := []struct {
		name       string
		conditions []metav1.Condition
		wantReady  bool
		wantReason string
	}{
		{name: "no conditions", wantReason: "condition Ready is not set"},
		{
			name:       "ready",
			conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready"}},
			wantReady:  true,
		},
		{
			name:       "not ready with reason and message",
			conditions: []metav1.Condition{{Type: "Other", Status: metav1.ConditionTrue}, {Type: "Ready", Status: metav1.ConditionFalse, Reason: "Broken", Message: "disk gone"}},
			wantReason: "condition Ready is False (Broken: disk gone)",
		},
		{
			name:       "unknown with reason only",
			conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionUnknown, Reason: "Pending"}},
			wantReason: "condition Ready is Unknown (Pending)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			class := &KWOKNodeClass{Status: KWOKNodeClassStatus{Conditions: tt.conditions}}
			ready, reason := class.Ready()
			if ready != tt.wantReady || reason != tt.wantReason {
				t.Errorf("Ready() = %v, %q; want %v, %q", ready, reason, tt.wantReady, tt.wantReason)
			}
		})
	}
}
