package drift

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	kwokv1alpha1 "github.com/joinery-dev/joinery/apis/kwok/v1alpha1"
	"github.com/joinery-dev/joinery/controller/nodeclaim/internal/fixtures"
)

func TestDriftInputsChanged(t *testing.T) {
	tests := []struct {
		name string
		edit func(*karpv1.NodeClaim)
		want bool
	}{
		{name: "nothing but the resource version", edit: func(nc *karpv1.NodeClaim) { nc.ResourceVersion = "2" }},
		{name: "the Drifted condition (its own write)", edit: drifted("AMIDrift")},
		{name: "a label", edit: func(nc *karpv1.NodeClaim) { nc.Labels["example.com/x"] = "y" }, want: true},
		{name: "an annotation", edit: func(nc *karpv1.NodeClaim) { nc.Annotations[karpv1.NodePoolHashAnnotationKey] = "9" }, want: true},
		{name: "the spec", edit: func(nc *karpv1.NodeClaim) { nc.Generation++ }, want: true},
		{name: "Launched", edit: func(nc *karpv1.NodeClaim) { nc.Status.Conditions[0].Status = metav1.ConditionFalse }, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := launchedNodeClaim()
			updated := old.DeepCopy()
			tt.edit(updated)
			if got := (driftInputsChanged{}).Update(event.UpdateEvent{ObjectOld: old, ObjectNew: updated}); got != tt.want {
				t.Errorf("Update = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestWatchMappings(t *testing.T) {
	mine := launchedNodeClaim()
	otherPool := fixtures.NodeClaim("other-pool")
	otherPool.Labels[karpv1.NodePoolLabelKey] = "other"
	otherClass := fixtures.NodeClaim("other-class")
	otherClass.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: kwokv1alpha1.KWOKNodeClassKind, Name: "other"}
	c := fixtures.NewClient(t, mine, otherPool, otherClass)
	ctl := New(c, fixtures.NewProvider(t, c), Options{})

	gotPool := ctl.nodeClaimsOfNodePool(t.Context(), &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	gotClass := ctl.nodeClaimsOfNodeClass(schema.GroupKind{Group: kwokv1alpha1.Group, Kind: kwokv1alpha1.KWOKNodeClassKind})(
		t.Context(), &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: fixtures.NodeClassName}})
	otherKind := ctl.nodeClaimsOfNodeClass(schema.GroupKind{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass"})(
		t.Context(), &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: fixtures.NodeClassName}})
	for _, tc := range []struct {
		what string
		got  []string
		want []string
	}{
		{"nodepool default", requestNames(gotPool), []string{"nc", "other-class"}},
		{"kwoknodeclass default", requestNames(gotClass), []string{"nc", "other-pool"}},
		{"ec2nodeclass default", requestNames(otherKind), nil},
	} {
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("%s maps to %v, want %v", tc.what, tc.got, tc.want)
		}
	}
}

// requestNames returns the requested names, sorted.
func requestNames(reqs []reconcile.Request) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, r.Name)
	}
	slices.Sort(out)
	return out
}
