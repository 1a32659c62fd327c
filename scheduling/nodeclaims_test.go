package scheduling

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

func TestNodeIndex(t *testing.T) {
	node := func(name, providerID string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
	}
	a, b, bare := node("a", "cloud://a"), node("b", "cloud://b"), node("bare", "")
	ix := IndexNodes([]*corev1.Node{a, b, bare})
	tests := []struct {
		name               string
		nodeName, provider string
		want               *corev1.Node
	}{
		{name: "by node name", nodeName: "a", provider: "cloud://a", want: a},
		{name: "node name wins over provider ID", nodeName: "a", provider: "cloud://b", want: a},
		{name: "by provider ID before the status names the node", provider: "cloud://b", want: b},
		{name: "a node name that is gone falls back to the provider ID", nodeName: "gone", provider: "cloud://b", want: b},
		{name: "by name without a provider ID", nodeName: "bare", want: bare},
		{name: "launching", want: nil},
		{name: "unknown provider ID", provider: "cloud://c", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc := &karpv1.NodeClaim{Status: karpv1.NodeClaimStatus{NodeName: tt.nodeName, ProviderID: tt.provider}}
			if got := ix.NodeOf(nc); got != tt.want {
				t.Errorf("NodeOf = %v, want %v", got, tt.want)
			}
		})
	}
	if ix.Node("b") != b || ix.Node("c") != nil {
		t.Error("Node by name")
	}
}
