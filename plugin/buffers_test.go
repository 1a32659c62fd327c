package plugin

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	autoscalingv1alpha1 "github.com/joinery-dev/joinery/apis/autoscaling/v1alpha1"
	"github.com/joinery-dev/joinery/simulation"
)

func TestProvisioningCondition(t *testing.T) {
	pods := []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{UID: "a"}}, {ObjectMeta: metav1.ObjectMeta{UID: "b"}}, {ObjectMeta: metav1.ObjectMeta{UID: "c"}},
	}
	tests := []struct {
		name          string
		existing      []types.UID
		inFlight      map[types.UID]string
		unschedulable map[types.UID]string
		// reasons are the structured reasons of the unschedulable pods: the condition is
		// decided from their kinds, whatever the text says.
		reasons map[types.UID][]simulation.NodePoolReason
		want    metav1.ConditionStatus
		reason  string
		message string
	}{
		{name: "all on existing nodes", existing: []types.UID{"a", "b", "c"},
			want: metav1.ConditionTrue, reason: ReasonBufferProvisioned, message: "all 3 chunk(s) fit existing nodes"},
		{name: "some wait for NodeClaims", existing: []types.UID{"a"}, inFlight: map[types.UID]string{"b": "nc-1", "c": "nc-1"},
			want: metav1.ConditionFalse, reason: ReasonBufferWaitingForCapacity, message: "1 of 3 chunk(s) fit existing nodes; the rest wait"},
		{name: "limits stop one", existing: []types.UID{"a", "b"}, unschedulable: map[types.UID]string{"c": `no NodePool fits: nodepool "default": limits reached`},
			reasons: map[types.UID][]simulation.NodePoolReason{"c": {{NodePool: "default", Kind: simulation.ReasonLimits}}},
			want:    metav1.ConditionFalse, reason: autoscalingv1alpha1.ReasonInsufficientCapacity, message: "2 of 3 chunk(s) fit existing nodes; NodePool limits stop the rest"},
		{name: "limits win over other reasons", unschedulable: map[types.UID]string{"a": "no NodePool fits: taint", "b": "no NodePool fits: limits reached"},
			reasons: map[types.UID][]simulation.NodePoolReason{"a": {{Kind: simulation.ReasonRequirements}}, "b": {{Kind: simulation.ReasonLimits}}},
			want:    metav1.ConditionFalse, reason: autoscalingv1alpha1.ReasonInsufficientCapacity},
		{name: "limits in other words", existing: []types.UID{"a"}, unschedulable: map[types.UID]string{"b": "no NodePool fits: the NodePool's quota is used up"},
			reasons: map[types.UID][]simulation.NodePoolReason{"b": {{Kind: simulation.ReasonRequirements}, {Kind: simulation.ReasonLimits}}},
			want:    metav1.ConditionFalse, reason: autoscalingv1alpha1.ReasonInsufficientCapacity, message: "quota is used up"},
		{name: "limits named, but not the reason", existing: []types.UID{"a"}, unschedulable: map[types.UID]string{"b": "no NodePool fits: pod limits reached on no instance type"},
			reasons: map[types.UID][]simulation.NodePoolReason{"b": {{Kind: simulation.ReasonNoInstanceType}}},
			want:    metav1.ConditionFalse, reason: ReasonBufferUnschedulable, message: "pod limits reached"},
		{name: "fits no NodePool", existing: []types.UID{"a"}, unschedulable: map[types.UID]string{"b": "no NodePool fits: incompatible requirements"},
			reasons: map[types.UID][]simulation.NodePoolReason{"b": {{Kind: simulation.ReasonRequirements}}},
			want:    metav1.ConditionFalse, reason: ReasonBufferUnschedulable, message: "incompatible requirements"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := &simulation.Plan{InFlight: tt.inFlight, Unschedulable: tt.unschedulable, Reasons: tt.reasons}
			got := provisioningCondition(pods, plan, sets.New(tt.existing...))
			if got.Type != autoscalingv1alpha1.ConditionTypeProvisioning || got.Status != tt.want || got.Reason != tt.reason || !strings.Contains(got.Message, tt.message) {
				t.Errorf("condition %+v, want %s/%s containing %q", got, tt.want, tt.reason, tt.message)
			}
		})
	}
}
