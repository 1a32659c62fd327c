package cloudprovider

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

func TestRunningOffering(t *testing.T) {
	its := InstanceTypes{
		testType("a", "m5", NewOffering("zone-a", "spot", 0.3, true), NewOffering("zone-a", "on-demand", 1, false), NewOffering("zone-b", "on-demand", 0.9, true)),
		testType("b", "c5", NewOffering("zone-a", "on-demand", 2, true)),
	}
	labels := func(it, zone, ct string) map[string]string {
		return map[string]string{corev1.LabelInstanceTypeStable: it, corev1.LabelTopologyZone: zone, karpv1.CapacityTypeLabelKey: ct}
	}
	tests := []struct {
		name   string
		labels map[string]string
		want   float64 // 0: none
	}{
		{"its zone and capacity type", labels("a", "zone-a", "spot"), 0.3},
		{"unavailable offerings still have a price", labels("a", "zone-a", "on-demand"), 1},
		{"another type", labels("b", "zone-a", "on-demand"), 2},
		{"no such offering", labels("b", "zone-b", "on-demand"), 0},
		{"not launched", map[string]string{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it, o := its.RunningOffering(tt.labels)
			switch {
			case tt.want == 0 && o != nil:
				t.Errorf("offering %s %v, want none", it.Name, o.Price)
			case tt.want != 0 && (o == nil || o.Price != tt.want || it.Name != tt.labels[corev1.LabelInstanceTypeStable]):
				t.Errorf("offering %v, want price %v", o, tt.want)
			}
		})
	}
}
