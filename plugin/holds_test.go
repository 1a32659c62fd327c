package plugin

import (
	"maps"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
)

// holdFixture is a hold book and the wait book it reads, built from plans (each a list of
// pods planned together, made in order), the pods in flight when each plan was made (by the
// plan's index), the pods that wait, and the pods held.
type holdFixture struct {
	plans    [][]types.UID
	inFlight map[int][]types.UID
	waiting  []types.UID
	held     []types.UID
}

func (f holdFixture) build() (*holdBook, *waitBook) {
	holds, waits := newHoldBook(), newWaitBook()
	waits.assign("default-a", f.waiting...)
	for i, pods := range f.plans {
		plan := holds.beginPlan(sets.New(f.inFlight[i]...))
		holds.addToPlan(plan, pods...)
	}
	for _, uid := range f.held {
		holds.hold(uid, time.Unix(0, 0))
	}
	return holds, waits
}

func TestHoldBookRejectedWithPlan(t *testing.T) {
	cases := []struct {
		name    string
		fixture holdFixture
		// stuck are rejected (in order) before pod.
		stuck []types.UID
		// placed stop waiting, and are unpinned, after stuck are rejected.
		placed []types.UID
		pod    types.UID
		want   bool
	}{
		{name: "a sibling still waits",
			fixture: holdFixture{plans: [][]types.UID{{"a", "b"}}, waiting: []types.UID{"a", "b"}},
			pod:     "a", want: true},
		{name: "every sibling placed",
			fixture: holdFixture{plans: [][]types.UID{{"a", "b"}}, waiting: []types.UID{"a"}},
			pod:     "a", want: false},
		{name: "the only waiting sibling was rejected since its retry",
			fixture: holdFixture{plans: [][]types.UID{{"a", "b"}}, waiting: []types.UID{"a", "b"}, held: []types.UID{"b"}},
			stuck:   []types.UID{"b"},
			pod:     "a", want: false},
		{name: "a stuck sibling is retried when a third pod of the plan is placed",
			fixture: holdFixture{plans: [][]types.UID{{"a", "b", "c"}}, waiting: []types.UID{"a", "b", "c"}, held: []types.UID{"b"}},
			stuck:   []types.UID{"b"},
			placed:  []types.UID{"c"},
			pod:     "a", want: true},
		{name: "a pod of no known plan counts every waiting pod",
			fixture: holdFixture{waiting: []types.UID{"a", "x"}},
			pod:     "a", want: true},
		{name: "a pod of no known plan, alone waiting",
			fixture: holdFixture{waiting: []types.UID{"a"}},
			pod:     "a", want: false},
		{name: "a pod in flight when the plan was made",
			fixture: holdFixture{plans: [][]types.UID{{"x"}, {"a"}}, inFlight: map[int][]types.UID{1: {"x"}}, waiting: []types.UID{"a", "x"}},
			pod:     "a", want: true},
		{name: "a later plan that counted the pod in flight",
			fixture: holdFixture{plans: [][]types.UID{{"a"}, {"y"}}, inFlight: map[int][]types.UID{1: {"a"}}, waiting: []types.UID{"a", "y"}},
			pod:     "a", want: true},
		{name: "a pod of a later plan that did not count it",
			fixture: holdFixture{plans: [][]types.UID{{"a"}, {"x"}}, waiting: []types.UID{"a", "x"}},
			pod:     "a", want: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			holds, waits := tc.fixture.build()
			for _, uid := range tc.stuck {
				holds.rejectedWithPlan(uid, names.PodTopologySpread, waits)
			}
			for _, uid := range tc.placed {
				waits.forgetPod(uid)
				holds.unpin(uid)
			}
			if got := holds.rejectedWithPlan(tc.pod, names.PodTopologySpread, waits); got != tc.want {
				t.Errorf("rejectedWithPlan(%s) = %v, want %v", tc.pod, got, tc.want)
			}
		})
	}
}

func TestHoldBookUnpin(t *testing.T) {
	cases := []struct {
		name      string
		fixture   holdFixture
		unpin     []types.UID
		want      []types.UID
		wantHeld  []types.UID // still held afterwards
		wantEnded []types.UID // no longer held
	}{
		{name: "a placed pod retries the held pods of its plan",
			fixture:  holdFixture{plans: [][]types.UID{{"a", "b", "c"}}, held: []types.UID{"a", "b"}},
			unpin:    []types.UID{"c"},
			want:     []types.UID{"a", "b"},
			wantHeld: []types.UID{"a", "b"}},
		{name: "the unpinned pod's own hold ends",
			fixture:   holdFixture{plans: [][]types.UID{{"a", "b"}}, held: []types.UID{"a", "b"}},
			unpin:     []types.UID{"a"},
			want:      []types.UID{"b"},
			wantHeld:  []types.UID{"b"},
			wantEnded: []types.UID{"a"}},
		{name: "held pods of other plans stay unretried",
			fixture:  holdFixture{plans: [][]types.UID{{"a", "b"}, {"c", "d"}}, held: []types.UID{"a", "c"}},
			unpin:    []types.UID{"b"},
			want:     []types.UID{"a"},
			wantHeld: []types.UID{"a", "c"}},
		{name: "a held pod of a plan that counted the pod in flight is retried",
			fixture:  holdFixture{plans: [][]types.UID{{"b"}, {"a"}}, inFlight: map[int][]types.UID{1: {"b"}}, held: []types.UID{"a"}},
			unpin:    []types.UID{"b"},
			want:     []types.UID{"a"},
			wantHeld: []types.UID{"a"}},
		{name: "a held pod of no known plan is retried by any pod",
			fixture:  holdFixture{held: []types.UID{"c"}},
			unpin:    []types.UID{"x"},
			want:     []types.UID{"c"},
			wantHeld: []types.UID{"c"}},
		{name: "a released NodeClaim's pods end their holds together",
			fixture:   holdFixture{plans: [][]types.UID{{"a", "b"}}, held: []types.UID{"a", "b"}},
			unpin:     []types.UID{"a", "b"},
			wantEnded: []types.UID{"a", "b"}},
		{name: "nothing held",
			fixture: holdFixture{plans: [][]types.UID{{"a", "b"}}},
			unpin:   []types.UID{"a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			holds, _ := tc.fixture.build()
			if got := holds.unpin(tc.unpin...); !slices.Equal(got, tc.want) {
				t.Errorf("unpin(%v) = %v, want %v", tc.unpin, got, tc.want)
			}
			later := time.Unix(60, 0)
			for _, uid := range tc.wantHeld {
				if since, began := holds.hold(uid, later); began || !since.Equal(time.Unix(0, 0)) {
					t.Errorf("%s: hold began again (%v, since %v); want it kept", uid, began, since)
				}
			}
			for _, uid := range tc.wantEnded {
				if _, began := holds.hold(uid, later); !began {
					t.Errorf("%s: still held; want its hold ended", uid)
				}
			}
		})
	}
}

func TestHoldBookPlaced(t *testing.T) {
	cases := []struct {
		name      string
		fixture   holdFixture
		stuck     []types.UID // rejected, in order, before the placement
		placed    types.UID
		notNow    []types.UID
		want      []types.UID
		wantStuck []types.UID // stuck afterwards
	}{
		{name: "every held pod of the plan is retried when none is left out",
			fixture: holdFixture{plans: [][]types.UID{{"a", "b", "c", "d"}}, waiting: []types.UID{"a", "b", "d"}, held: []types.UID{"a", "b"}},
			stuck:   []types.UID{"a", "b"}, placed: "c",
			want: []types.UID{"a", "b"}},
		{name: "a pod left out stays stuck while another can move the plan on",
			fixture: holdFixture{plans: [][]types.UID{{"a", "b", "c", "d"}}, waiting: []types.UID{"a", "b", "d"}, held: []types.UID{"a", "b"}},
			stuck:   []types.UID{"a", "b"}, placed: "c", notNow: []types.UID{"a"},
			want: []types.UID{"b"}, wantStuck: []types.UID{"a"}},
		{name: "a pod left out is retried when nothing else can move its plan on",
			fixture: holdFixture{plans: [][]types.UID{{"a", "c"}}, waiting: []types.UID{"a"}, held: []types.UID{"a"}},
			stuck:   []types.UID{"a"}, placed: "c", notNow: []types.UID{"a"},
			want: []types.UID{"a"}},
		{name: "a pod left out stays stuck while a retried one may still move the plan on",
			fixture: holdFixture{plans: [][]types.UID{{"a", "b", "c"}}, waiting: []types.UID{"a", "b"}, held: []types.UID{"a", "b"}},
			stuck:   []types.UID{"a", "b"}, placed: "c", notNow: []types.UID{"a"},
			want: []types.UID{"b"}, wantStuck: []types.UID{"a"}},
		{name: "a held pod not stuck is retried even if left out",
			fixture: holdFixture{plans: [][]types.UID{{"a", "b", "c"}}, waiting: []types.UID{"a", "b"}, held: []types.UID{"a", "b"}},
			stuck:   []types.UID{"b"}, placed: "c", notNow: []types.UID{"a"},
			want: []types.UID{"a", "b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			holds, waits := tc.fixture.build()
			for _, uid := range tc.stuck {
				holds.rejectedWithPlan(uid, names.PodTopologySpread, waits)
			}
			waits.forgetPod(tc.placed)
			if got := holds.placed(tc.placed, sets.New(tc.notNow...), waits); !slices.Equal(got, tc.want) {
				t.Errorf("placed(%s) = %v, want %v", tc.placed, got, tc.want)
			}
			if got := slices.Sorted(maps.Keys(holds.stuck)); !slices.Equal(got, tc.wantStuck) {
				t.Errorf("stuck afterwards %v, want %v", got, tc.wantStuck)
			}
		})
	}
}

// TestPlanBookSharesPlan: sharesPlan answers what siblings lists, for every pair of pods of
// plans that counted pods in flight, and of later plans that counted a pod of an earlier one.
func TestPlanBookSharesPlan(t *testing.T) {
	b := newPlanBook()
	first := b.begin(nil)
	b.add(first, "a", "b")
	second := b.begin(sets.New[types.UID]("a", "x")) // a was in flight: second is later than first
	b.add(second, "c")
	third := b.begin(nil)
	b.add(third, "d", "e")
	pods := []types.UID{"a", "b", "c", "d", "e", "x", "unknown"}
	for _, uid := range pods {
		siblings, knownSiblings := b.siblings(uid)
		for _, other := range pods {
			shares, known := b.sharesPlan(uid, sets.New(other))
			want := other != uid && slices.Contains(siblings, other)
			if shares != want || known != knownSiblings {
				t.Errorf("sharesPlan(%s, %s) = %v, %v; siblings say %v, %v", uid, other, shares, known, want, knownSiblings)
			}
		}
	}
}
