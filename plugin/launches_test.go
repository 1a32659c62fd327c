package plugin

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
)

// launchedAs is a NodeClaim name as the informer shows it with node and providerID in its
// status ("" for none yet).
func launchedAs(name, node, providerID string) *karpv1.NodeClaim {
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
	nc.Status.NodeName, nc.Status.ProviderID = node, providerID
	return nc
}

func nodeNamed(name, providerID string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
}

func TestLaunchTrackerFindsTheNodeClaimOfANode(t *testing.T) {
	cases := []struct {
		name    string
		seen    []*karpv1.NodeClaim // observed in order
		deleted []string
		node    *corev1.Node
		want    string
	}{
		{name: "by the node the NodeClaim names",
			seen: []*karpv1.NodeClaim{launchedAs("default-a", "node-a", "kwok://a")},
			node: nodeNamed("node-a", ""), want: "default-a"},
		{name: "by provider ID before the NodeClaim names the node",
			seen: []*karpv1.NodeClaim{launchedAs("default-a", "", "kwok://a")},
			node: nodeNamed("node-a", "kwok://a"), want: "default-a"},
		{name: "by a node named as the NodeClaim",
			seen: []*karpv1.NodeClaim{launchedAs("default-a", "", "")},
			node: nodeNamed("default-a", ""), want: "default-a"},
		{name: "the named node wins over a provider ID",
			seen: []*karpv1.NodeClaim{launchedAs("default-a", "node-a", ""), launchedAs("default-b", "", "kwok://b")},
			node: nodeNamed("node-a", "kwok://b"), want: "default-a"},
		{name: "a node of no NodeClaim",
			seen: []*karpv1.NodeClaim{launchedAs("default-a", "node-a", "kwok://a")},
			node: nodeNamed("node-x", "kwok://x"), want: ""},
		{name: "a deleted NodeClaim's node",
			seen:    []*karpv1.NodeClaim{launchedAs("default-a", "node-a", "kwok://a")},
			deleted: []string{"default-a"},
			node:    nodeNamed("node-a", "kwok://a"), want: ""},
		{name: "a node reused by a later NodeClaim survives the first one's deletion",
			seen:    []*karpv1.NodeClaim{launchedAs("default-a", "node-a", "kwok://a"), launchedAs("default-b", "node-a", "kwok://a")},
			deleted: []string{"default-a"},
			node:    nodeNamed("node-a", "kwok://a"), want: "default-b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tracker := newLaunchTracker()
			for _, nc := range tc.seen {
				tracker.observe(nc)
			}
			for _, name := range tc.deleted {
				tracker.deleted(name)
			}
			if got := tracker.nodeClaimOf(tc.node); got != tc.want {
				t.Errorf("nodeClaimOf(%s) = %q, want %q", tc.node.Name, got, tc.want)
			}
		})
	}
}

func TestLaunchTrackerObserve(t *testing.T) {
	tracker := newLaunchTracker()
	registered := launchedAs("default-a", "node-a", "kwok://a")
	registered.Spec.Taints = []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}}
	initialized := registered.DeepCopy()
	initialized.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue}}

	steps := []struct {
		nc                  *karpv1.NodeClaim
		wantBefore, wantNow launchState
	}{
		{nc: launchedAs("default-a", "", ""), wantBefore: launchState{}, wantNow: launchState{}},
		{nc: registered, wantBefore: launchState{},
			wantNow: launchState{nodeName: "node-a", providerID: "kwok://a", taints: registered.Spec.Taints}},
		{nc: initialized,
			wantBefore: launchState{nodeName: "node-a", providerID: "kwok://a", taints: registered.Spec.Taints},
			wantNow:    launchState{nodeName: "node-a", providerID: "kwok://a", initialized: true, taints: registered.Spec.Taints}},
	}
	for i, step := range steps {
		before, now := tracker.observe(step.nc)
		if !sameLaunch(before, step.wantBefore) || !sameLaunch(now, step.wantNow) {
			t.Errorf("step %d: observe = %+v, %+v; want %+v, %+v", i, before, now, step.wantBefore, step.wantNow)
		}
		if got := tracker.launched("default-a"); !sameLaunch(got, step.wantNow) {
			t.Errorf("step %d: launched = %+v, want %+v", i, got, step.wantNow)
		}
	}
	if got := tracker.nodeOf("default-a"); got != "node-a" {
		t.Errorf("nodeOf = %q, want node-a", got)
	}
	tracker.deleted("default-a")
	if got := tracker.launched("default-a"); !sameLaunch(got, launchState{}) {
		t.Errorf("launched after deletion = %+v, want nothing", got)
	}
}

func sameLaunch(a, b launchState) bool {
	return a.nodeName == b.nodeName && a.providerID == b.providerID && a.initialized == b.initialized &&
		slices.EqualFunc(a.taints, b.taints, func(x, y corev1.Taint) bool { return x.MatchTaint(&y) })
}

func TestLaunchTrackerClaims(t *testing.T) {
	type claimed struct {
		nodeClaim string
		pods      []types.UID
	}
	cases := []struct {
		name        string
		claims      []claimed
		drop        func(*launchTracker)
		want        map[types.UID]string // pod to the NodeClaim claiming it; absent: none
		wantUnclaim []types.UID
	}{
		{name: "each pod by the NodeClaim listing it",
			claims: []claimed{{"default-a", []types.UID{"p1", "p2"}}, {"default-b", []types.UID{"p3"}}},
			want:   map[types.UID]string{"p1": "default-a", "p2": "default-a", "p3": "default-b"}},
		{name: "the latest annotation seen wins",
			claims: []claimed{{"default-a", []types.UID{"p1"}}, {"default-b", []types.UID{"p1"}}},
			want:   map[types.UID]string{"p1": "default-b"}},
		{name: "dropping a NodeClaim's claims keeps the others'",
			claims:      []claimed{{"default-a", []types.UID{"p1", "p2"}}, {"default-b", []types.UID{"p3"}}},
			drop:        func(lt *launchTracker) { lt.dropClaims("default-a") },
			want:        map[types.UID]string{"p3": "default-b"},
			wantUnclaim: []types.UID{"p1", "p2"}},
		{name: "dropping a pod's claim",
			claims:      []claimed{{"default-a", []types.UID{"p1", "p2"}}},
			drop:        func(lt *launchTracker) { lt.dropClaim("p1") },
			want:        map[types.UID]string{"p2": "default-a"},
			wantUnclaim: []types.UID{"p1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tracker := newLaunchTracker()
			for _, c := range tc.claims {
				tracker.claim(c.nodeClaim, c.pods)
			}
			if tc.drop != nil {
				tc.drop(tracker)
			}
			for uid, want := range tc.want {
				if got, ok := tracker.claimOf(uid); !ok || got != want {
					t.Errorf("claimOf(%s) = %q, %v; want %q", uid, got, ok, want)
				}
			}
			for _, uid := range tc.wantUnclaim {
				if got, ok := tracker.claimOf(uid); ok {
					t.Errorf("claimOf(%s) = %q; want no claim", uid, got)
				}
			}
		})
	}
}

func TestLaunchTrackerWrites(t *testing.T) {
	cases := []struct {
		name string
		// run writes and observes; the write to default-a is of pods p1 and p2.
		run            func(*launchTracker)
		wantUnobserved int
	}{
		{name: "a write not seen yet",
			run:            func(lt *launchTracker) { lt.expectWritten("default-a", []types.UID{"p1", "p2"}) },
			wantUnobserved: 1},
		{name: "a write seen in part",
			run: func(lt *launchTracker) {
				lt.expectWritten("default-a", []types.UID{"p1", "p2"})
				lt.observeWrites(withPlanned("default-a", "p1"))
			},
			wantUnobserved: 1},
		{name: "a write seen whole",
			run: func(lt *launchTracker) {
				lt.expectWritten("default-a", []types.UID{"p1", "p2"})
				lt.observeWrites(withPlanned("default-a", "p1", "p2", "p3"))
			},
			wantUnobserved: 0},
		{name: "a write the informer showed before the writer recorded it",
			run: func(lt *launchTracker) {
				lt.observeWrites(withPlanned("default-a", "p1", "p2"))
				lt.expectWritten("default-a", []types.UID{"p1", "p2"})
			},
			wantUnobserved: 0},
		{name: "an older copy seen after the write: still waiting",
			run: func(lt *launchTracker) {
				lt.observeWrites(withPlanned("default-a", "p1"))
				lt.expectWritten("default-a", []types.UID{"p1", "p2"})
			},
			wantUnobserved: 1},
		{name: "the NodeClaim seen being deleted",
			run: func(lt *launchTracker) {
				lt.expectWritten("default-a", []types.UID{"p1", "p2"})
				lt.observeWrites(deleting(withPlanned("default-a")))
			},
			wantUnobserved: 0},
		{name: "the NodeClaim deleted",
			run: func(lt *launchTracker) {
				lt.expectWritten("default-a", []types.UID{"p1", "p2"})
				lt.deleted("default-a")
			},
			wantUnobserved: 0},
		// A replica took the slot of virtual pod p2 before the informer showed the NodeClaim:
		// the annotation it shows lists r instead (issue 24: the next batch waited 10 s for p2).
		{name: "a slot taken before the creation was seen",
			run: func(lt *launchTracker) {
				lt.expectWritten("default-a", []types.UID{"p1", "p2"})
				lt.expectReplaced("default-a", "p2", "r")
				lt.observeWrites(withPlanned("default-a", "p1", "r"))
			},
			wantUnobserved: 0},
		{name: "a slot taken, the swap not seen yet",
			run: func(lt *launchTracker) {
				lt.expectWritten("default-a", []types.UID{"p1", "p2"})
				lt.expectReplaced("default-a", "p2", "r")
				lt.observeWrites(withPlanned("default-a", "p1", "p2"))
			},
			wantUnobserved: 1},
		{name: "another NodeClaim seen",
			run: func(lt *launchTracker) {
				lt.expectWritten("default-a", []types.UID{"p1", "p2"})
				lt.observeWrites(withPlanned("default-b", "p1", "p2"))
			},
			wantUnobserved: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tracker := newLaunchTracker()
			tc.run(tracker)
			if got := tracker.writesUnobserved(); got != tc.wantUnobserved {
				t.Errorf("writesUnobserved = %d, want %d", got, tc.wantUnobserved)
			}
			if got, want := tracker.writeUnobserved("default-a"), tc.wantUnobserved > 0; got != want {
				t.Errorf("writeUnobserved(default-a) = %v, want %v", got, want)
			}
		})
	}
}
