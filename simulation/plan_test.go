package simulation

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

func TestPlannedPodsAnnotation(t *testing.T) {
	ptr := func(s string) *string { return &s }
	cases := []struct {
		name        string
		annotation  *string
		add         []types.UID
		wantValue   string
		wantChanged bool
	}{
		{name: "no annotation yet", add: []types.UID{"b", "a"}, wantValue: "a,b", wantChanged: true},
		{name: "merged and sorted", annotation: ptr("c,a"), add: []types.UID{"b"}, wantValue: "a,b,c", wantChanged: true},
		{name: "duplicates dropped", annotation: ptr("a,b"), add: []types.UID{"b", "a"}, wantValue: "a,b", wantChanged: false},
		{name: "blank parts ignored", annotation: ptr(" a, ,b "), add: []types.UID{"c"}, wantValue: "a,b,c", wantChanged: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nc := &karpv1.NodeClaim{}
			if tc.annotation != nil {
				nc.ObjectMeta = metav1.ObjectMeta{Annotations: map[string]string{PlannedPodsAnnotationKey: *tc.annotation}}
			}
			changed := AddPlannedPods(nc, tc.add...)
			if changed != tc.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tc.wantChanged)
			}
			if got := nc.Annotations[PlannedPodsAnnotationKey]; !tc.wantChanged && tc.annotation != nil {
				if got != *tc.annotation {
					t.Errorf("unchanged annotation rewritten: %q", got)
				}
			} else if got != tc.wantValue {
				t.Errorf("annotation %q, want %q", got, tc.wantValue)
			}
			var want []types.UID
			for _, part := range []byte(tc.wantValue) {
				if part != ',' {
					want = append(want, types.UID(part))
				}
			}
			if got := PlannedPods(nc); !slices.Equal(got, want) {
				t.Errorf("PlannedPods = %v, want %v", got, want)
			}
		})
	}
}
