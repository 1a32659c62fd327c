package nodeclass

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	"github.com/joinery-dev/joinery/cloudprovider/aws/nodeclass"
)

// setSelector changes the fixture class's placement group selector, as a new generation.
func setSelector(t *testing.T, c client.Client, sel *awsv1.PlacementGroupSelector) {
	t.Helper()
	nc := &awsv1.EC2NodeClass{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: "default"}, nc); err != nil {
		t.Fatal(err)
	}
	nc.Spec.PlacementGroupSelector = sel
	nc.Generation++ // the fake client does not bump it; a spec change makes every part due
	if err := c.Update(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
}

func TestPlacementGroupReadyFollowsTheSelector(t *testing.T) {
	training := awsv1.PlacementGroup{ID: "pg-0a1", Name: "training", Strategy: awsv1.PlacementGroupStrategyCluster, State: "available"}
	resolver := &stubResolver{subnets: []awsv1.Subnet{{ID: "subnet-1", Zone: "us-west-2a"}}}
	c, ctl := newFixture(t, resolver)

	steps := []struct {
		name      string
		sel       *awsv1.PlacementGroupSelector
		groups    []awsv1.PlacementGroup
		err       error
		wantCond  metav1.ConditionStatus // "" for no condition
		wantReady metav1.ConditionStatus
		wantIn    string // substring of Ready's message
	}{
		{name: "no selector: no condition, ready", wantReady: metav1.ConditionTrue},
		{name: "a selector that resolves", sel: &awsv1.PlacementGroupSelector{Name: "training"}, groups: []awsv1.PlacementGroup{training},
			wantCond: metav1.ConditionTrue, wantReady: metav1.ConditionTrue},
		{name: "a selector that matches nothing", sel: &awsv1.PlacementGroupSelector{Name: "gone"},
			err:      &nodeclass.NoMatchError{What: "placement group", Detail: `no available placement group has name "gone"`},
			wantCond: metav1.ConditionFalse, wantReady: metav1.ConditionFalse, wantIn: `PlacementGroupReady=False: no placement group matched: no available placement group has name "gone"`},
		{name: "selector removed again", wantReady: metav1.ConditionTrue},
	}
	for _, step := range steps {
		setSelector(t, c, step.sel)
		resolver.placementGroups, resolver.placementGroupsErr = step.groups, step.err
		nc, _ := reconcileOnce(t, c, ctl)
		cond := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypePlacementGroupReady)
		switch {
		case step.wantCond == "" && cond != nil:
			t.Errorf("%s: PlacementGroupReady = %+v, want none", step.name, cond)
		case step.wantCond != "" && (cond == nil || cond.Status != step.wantCond):
			t.Errorf("%s: PlacementGroupReady = %+v, want %s", step.name, cond, step.wantCond)
		}
		if step.wantCond == metav1.ConditionFalse && cond != nil && cond.Reason != "PlacementGroupNotFound" {
			t.Errorf("%s: reason %q, want PlacementGroupNotFound", step.name, cond.Reason)
		}
		ready := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypeReady)
		if ready == nil || ready.Status != step.wantReady || !strings.Contains(ready.Message, step.wantIn) {
			t.Errorf("%s: Ready = %+v, want %s with %q", step.name, ready, step.wantReady, step.wantIn)
		}
		wantGroups := 0
		if step.wantCond == metav1.ConditionTrue {
			wantGroups = 1
		}
		if len(nc.Status.PlacementGroups) != wantGroups || wantGroups == 1 && nc.Status.PlacementGroups[0] != training {
			t.Errorf("%s: status.placementGroups = %+v", step.name, nc.Status.PlacementGroups)
		}
	}
}

func TestHashLeavesOutPlacementGroupsAndPrefixes(t *testing.T) {
	base := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{Role: "r", AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}}}
	baseHash, err := Hash(base)
	if err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(*awsv1.EC2NodeClassSpec){
		"ipPrefixCount":          func(s *awsv1.EC2NodeClassSpec) { s.IPPrefixCount = ptr.To[int32](4) },
		"placementGroupSelector": func(s *awsv1.EC2NodeClassSpec) { s.PlacementGroupSelector = &awsv1.PlacementGroupSelector{Name: "pg"} },
	} {
		nc := base.DeepCopy()
		edit(&nc.Spec)
		if h, err := Hash(nc); err != nil || h != baseHash {
			t.Errorf("%s changed the hash (%s, %v); Karpenter drifts neither through it", name, h, err)
		}
	}
}
