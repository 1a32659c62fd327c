package simulation

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
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

// TestRemovePlannedPods: a replica that takes the place planned for it replaces its virtual
// pod in the annotation; removing the last pod removes the annotation.
func TestRemovePlannedPods(t *testing.T) {
	cases := []struct {
		name        string
		annotation  string
		remove      []types.UID
		wantValue   string
		wantPresent bool
		wantChanged bool
	}{
		{name: "one of three", annotation: "a,b,c", remove: []types.UID{"b"}, wantValue: "a,c", wantPresent: true, wantChanged: true},
		{name: "not listed", annotation: "a,c", remove: []types.UID{"b"}, wantValue: "a,c", wantPresent: true},
		{name: "the last one", annotation: "a", remove: []types.UID{"a"}, wantChanged: true},
		{name: "no annotation", remove: []types.UID{"a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nc := &karpv1.NodeClaim{}
			if tc.annotation != "" {
				nc.Annotations = map[string]string{PlannedPodsAnnotationKey: tc.annotation}
			}
			if changed := RemovePlannedPods(nc, tc.remove...); changed != tc.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tc.wantChanged)
			}
			got, present := nc.Annotations[PlannedPodsAnnotationKey]
			if got != tc.wantValue || present != tc.wantPresent {
				t.Errorf("annotation %q (present %v), want %q (present %v)", got, present, tc.wantValue, tc.wantPresent)
			}
		})
	}
}

func TestPlannedRequests(t *testing.T) {
	list := func(cpu, memory string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
	}
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "nc"}}
	nc.Spec.Resources.Requests = list("1500m", "2Gi")
	if got, err := LaunchRequests(nc); err != nil || !equality.Semantic.DeepEqual(got, list("1500m", "2Gi")) {
		t.Fatalf("without the annotation: %v, %v; want the spec's requests", got, err)
	}
	if !RaisePlannedRequests(nc, list("3500m", "1Gi")) {
		t.Fatal("raising the planned requests changed nothing")
	}
	if RaisePlannedRequests(nc, list("2", "1Gi")) {
		t.Error("lower requests changed the annotation: it only ever grows")
	}
	if got, err := LaunchRequests(nc); err != nil || !equality.Semantic.DeepEqual(got, list("3500m", "2Gi")) {
		t.Errorf("launch requests %v, %v; want the larger of spec and annotation per resource (3500m, 2Gi)", got, err)
	}
	nc.Annotations[PlannedRequestsAnnotationKey] = "{not json"
	got, err := LaunchRequests(nc)
	if err == nil || !strings.Contains(err.Error(), PlannedRequestsAnnotationKey) {
		t.Errorf("corrupt annotation: error %v, want one naming %s", err, PlannedRequestsAnnotationKey)
	}
	if !equality.Semantic.DeepEqual(got, list("1500m", "2Gi")) {
		t.Errorf("corrupt annotation: %v, want the spec's requests", got)
	}
	if !RaisePlannedRequests(nc, list("1", "1Gi")) {
		t.Error("a corrupt annotation is not replaced")
	}
}
