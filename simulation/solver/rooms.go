package solver

import (
	"iter"
	"math"
)

// room is the most cpu, memory and pods a pod may still ask of a claim: the largest
// allocatable of its remaining types (per resource), within the bound the Filters see, less
// what its pods and daemons request. A pod asking more of any of them fails admits' checks
// on the claim, and since a claim's types only narrow and its requests only grow, its room
// only shrinks.
type room struct{ milliCPU, memory, pods int64 }

// noRoom holds no pod: it stands for the tree's leaves past the last claim.
var noRoom = room{math.MinInt64, math.MinInt64, math.MinInt64}

func (r room) holds(need room) bool {
	return need.milliCPU <= r.milliCPU && need.memory <= r.memory && need.pods <= r.pods
}

func maxRoom(a, b room) room {
	return room{max(a.milliCPU, b.milliCPU), max(a.memory, b.memory), max(a.pods, b.pods)}
}

// rooms indexes a batch's claims by room, in claim order: a max tree over claim indices, so
// tryClaims visits only the claims whose room holds the pod, without walking the (many, on
// a large batch mostly full) others one by one. Internal nodes hold the maximum per
// resource of their leaves, a bound only: a leaf decides.
type rooms struct {
	n    int    // claims indexed: 0..n-1
	size int    // leaves, a power of two
	tree []room // tree[1] is the root; tree[size+i] is claim i's room
}

// set records claim i's room; i may be n (the next claim).
func (t *rooms) set(i int, r room) {
	if i >= t.size {
		t.grow(i + 1)
	}
	t.n = max(t.n, i+1)
	j := t.size + i
	t.tree[j] = r
	for j /= 2; j >= 1; j /= 2 {
		t.tree[j] = maxRoom(t.tree[2*j], t.tree[2*j+1])
	}
}

// grow makes room for n leaves, keeping the rooms set so far.
func (t *rooms) grow(n int) {
	size := max(t.size, 64)
	for size < n {
		size *= 2
	}
	tree := make([]room, 2*size)
	for i := range size {
		tree[size+i] = noRoom
		if i < t.n {
			tree[size+i] = t.tree[t.size+i]
		}
	}
	for j := size - 1; j >= 1; j-- {
		tree[j] = maxRoom(tree[2*j], tree[2*j+1])
	}
	t.size, t.tree = size, tree
}

// next returns the first claim index from from on whose room holds need, or -1. It climbs
// from the leaf to the next subtree on its right that may hold need, then descends into it:
// a claim close to from is found in a few steps.
func (t *rooms) next(from int, need room) int {
	if from >= t.n {
		return -1
	}
	j := t.size + from
	if t.tree[j].holds(need) {
		return from
	}
	for {
		for j%2 == 1 { // a right child: the rest of its parent is done
			j /= 2
			if j <= 1 {
				return -1
			}
		}
		j++
		if i := t.descend(j, need); i >= 0 {
			return i
		}
	}
}

// descend returns the first claim in subtree j whose room holds need, or -1. A subtree's
// maxima may come from different leaves, so a branch that holds may have no leaf that does.
func (t *rooms) descend(j int, need room) int {
	if !t.tree[j].holds(need) {
		return -1
	}
	if j >= t.size {
		return j - t.size // leaves past n never hold
	}
	if i := t.descend(2*j, need); i >= 0 {
		return i
	}
	return t.descend(2*j+1, need)
}

// roomOf computes claim c's room (see room).
func (r *run) roomOf(c *claim) room {
	top := room{c.boundVec.milliCPU, c.boundVec.memory, c.boundVec.pods}
	if !c.fixed {
		largest := room{}
		for _, it := range c.its {
			a := r.alloc.of(it)
			largest = maxRoom(largest, room{a.milliCPU, a.memory, a.pods})
		}
		top = room{min(top.milliCPU, largest.milliCPU), min(top.memory, largest.memory), min(top.pods, largest.pods)}
	}
	return room{top.milliCPU - c.requests.milliCPU, top.memory - c.requests.memory, top.pods - c.requests.pods}
}

// noteRoom updates claim c's room in the index after its requests or types changed; a claim
// not indexed yet is indexed when claimsWithRoom next runs.
func (r *run) noteRoom(c *claim) {
	if c.index < r.rooms.n {
		r.rooms.set(c.index, r.roomOf(c))
	}
}

// claimsWithRoom yields first (when not nil), then the batch's other claims in order whose
// room holds req: the others would fail admits. With Solver.exhaustive set it yields every
// claim, for tests comparing plans with and without the index.
func (r *run) claimsWithRoom(first *claim, req vec) iter.Seq[*claim] {
	for i := r.rooms.n; i < len(r.claims); i++ {
		r.rooms.set(i, r.roomOf(r.claims[i]))
	}
	need := room{req.milliCPU, req.memory, req.pods}
	return func(yield func(*claim) bool) {
		if first != nil && !yield(first) {
			return
		}
		if r.s.exhaustive {
			for _, c := range r.claims {
				if c != first && !yield(c) {
					return
				}
			}
			return
		}
		for i := r.rooms.next(0, need); i >= 0; i = r.rooms.next(i+1, need) {
			if c := r.claims[i]; c != first && !yield(c) {
				return
			}
		}
	}
}
