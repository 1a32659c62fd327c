package disruption

import (
	"context"
	"testing"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// TestPreplan: the pods of a NodeClaim a forceful method removes get their replacement at
// once, annotated with the method and NodeClaim; a retried decision launches nothing more; a
// node without pods needs nothing.
func TestPreplan(t *testing.T) {
	c := newClient(t, objects(testNodePool("default"), pair(testNode("a", "default")), testPod("web", "node-a"), pair(testNode("empty", "default")))...)
	sim := &fakeSimulator{}
	p := &Preplanner{Client: c, Simulator: sim}
	ctx := context.Background()
	nc := &karpv1.NodeClaim{}
	if err := c.Get(ctx, keyOf("a"), nc); err != nil {
		t.Fatal(err)
	}
	first, err := p.Preplan(ctx, "expiration", nc)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 1 {
		t.Fatalf("replacements = %v, want 1", first)
	}
	var list karpv1.NodeClaimList
	if err := c.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, item := range list.Items {
		if item.Annotations[ReplacementForAnnotationKey] == "preplan-expiration-a" {
			found++
		}
	}
	if found != 1 {
		t.Errorf("NodeClaims annotated preplan-expiration-a = %d, want 1", found)
	}
	again, err := p.Preplan(ctx, "expiration", nc)
	if err != nil || len(again) != 1 || again[0] != first[0] || sim.calls != 1 {
		t.Errorf("retried: %v, %v, %d simulations; want the first replacement and no new simulation", again, err, sim.calls)
	}
	empty := &karpv1.NodeClaim{}
	if err := c.Get(ctx, keyOf("empty"), empty); err != nil {
		t.Fatal(err)
	}
	if names, err := p.Preplan(ctx, "repair", empty); err != nil || len(names) != 0 {
		t.Errorf("empty node: %v, %v; want nothing", names, err)
	}
}
