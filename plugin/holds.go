package plugin

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// holdBook records which pods keep a pin their initialized node rejected (see holdPin) and
// since when, the held pods that cannot move their plan on (stuck), and which pods were
// planned together: what decides how long a hold lasts and which held pods to retry when a
// pod of their plan stops waiting.
//
// It has its own lock so that it is one consistent record whoever asks, but what it decides
// also reads the wait book (which pods still wait), which Plugin.mu guards: callers that pass
// the wait book hold Plugin.mu. Lock order: Plugin.mu, then holdBook.mu; it calls nothing
// outside itself while it holds its lock. Only pods that wait for a NodeClaim are held: every
// path that ends a wait unpins the pod in the same critical section of Plugin.mu.
type holdBook struct {
	mu    sync.Mutex
	plans *planBook
	held  map[types.UID]time.Time // pods keeping a rejected pin, since when
	// stuck are the held pods a Filter that counts pods rejected and that were not retried
	// since (see stillArriving), and which Filter it was.
	stuck map[types.UID]string
}

func newHoldBook() *holdBook {
	return &holdBook{plans: newPlanBook(), held: map[types.UID]time.Time{}, stuck: map[types.UID]string{}}
}

// beginPlan returns the id of a new plan made while the pods in inFlight waited for
// NodeClaims.
func (h *holdBook) beginPlan(inFlight sets.Set[types.UID]) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.plans.begin(inFlight)
}

// addToPlan records that pods belong to plan; a pod belongs to its latest plan only.
func (h *holdBook) addToPlan(plan uint64, pods ...types.UID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.plans.add(plan, pods...)
}

// leavePlan forgets uid's plan: it is planned again, or gone.
func (h *holdBook) leavePlan(uid types.UID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.plans.forget(uid)
}

// hold starts uid's hold at now unless it is held already, and returns since when it is held
// and whether the hold began now.
func (h *holdBook) hold(uid types.UID, now time.Time) (since time.Time, began bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if since, ok := h.held[uid]; ok {
		return since, false
	}
	h.held[uid] = now
	return now, true
}

// unstick records that uid is not rejected by its node now (the node is not in the
// scheduler's snapshot yet): it may still move its plan on.
func (h *holdBook) unstick(uid types.UID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.stuck, uid)
}

// rejectedWithPlan records that rejectedBy, a Filter that counts pods, rejected uid on its
// node with its plan as far as it got — until another pod of its plan is placed (and uid is
// retried), uid cannot move the rest of its plan on — and reports whether another pod of its
// plan still may (stillArriving). Callers hold Plugin.mu, which guards waits.
func (h *holdBook) rejectedWithPlan(uid types.UID, rejectedBy string, waits *waitBook) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stuck[uid] = rejectedBy
	return h.stillArriving(uid, waits)
}

// stillArriving reports whether another pod of uid's plan still waits for its NodeClaim
// and may still be placed: placing it may change what the Filters that count pods say. A held
// pod is not stuck for good: it is retried whenever a pod of its plan is placed, and one whose
// retry is still queued (behind this pod's) may well fit now. Only pods rejected since their
// last retry cannot move the plan on; when every waiting pod of the plan is such a pod, the
// plan cannot be completed as it stands. (Counting every held pod as stuck released whole
// plans at once: the first of a round of retries saw all the others held.) A pod of no known
// plan counts every waiting pod as its plan. Callers hold h.mu.
func (h *holdBook) stillArriving(uid types.UID, waits *waitBook) bool {
	siblings, known := h.plans.siblings(uid)
	if !known {
		siblings = make([]types.UID, 0, len(waits.nodeClaimOf))
		for other := range waits.nodeClaimOf {
			if other != uid {
				siblings = append(siblings, other)
			}
		}
	}
	return slices.ContainsFunc(siblings, func(other types.UID) bool {
		_, waiting := waits.nodeClaimFor(other)
		_, stuck := h.stuck[other]
		return waiting && !stuck
	})
}

// unpin ends the holds of uids, which stopped waiting (placed, released, or planned again),
// and returns the held pods whose decision may change now: those of the same plans (and those
// of no known plan). They are to be retried, so they are no longer stuck.
func (h *holdBook) unpin(uids ...types.UID) []types.UID {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.endHolds(uids...)
	for _, held := range out {
		delete(h.stuck, held)
	}
	return out
}

// stuckOfPlan returns the stuck pods that unpin(uid) would retry, each with the Filter that
// last rejected it.
func (h *holdBook) stuckOfPlan(uid types.UID) map[types.UID]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[types.UID]string{}
	for _, held := range h.heldOfPlans(sets.New(uid)) {
		if rejectedBy, ok := h.stuck[held]; ok {
			out[held] = rejectedBy
		}
	}
	return out
}

// placed ends the hold of uid, placed on a node, and returns the held pods to retry: unpin's,
// except the stuck ones in notNow — those the placement cannot let onto their nodes, or not
// before another pod retried now is placed (see Plugin.notToRetry): retried, they would only
// be rejected again. They stay stuck, so they do not count as moving their plan on, unless no
// other pod of their plan can move it on any more: then they are retried too, to be planned
// again at once. Callers hold Plugin.mu, which guards waits, and have forgotten uid's wait.
func (h *holdBook) placed(uid types.UID, notNow sets.Set[types.UID], waits *waitBook) []types.UID {
	h.mu.Lock()
	defer h.mu.Unlock()
	candidates := h.endHolds(uid)
	out := make([]types.UID, 0, len(candidates))
	var skipped []types.UID
	for _, held := range candidates {
		if _, stuck := h.stuck[held]; stuck && notNow.Has(held) {
			skipped = append(skipped, held)
			continue
		}
		delete(h.stuck, held)
		out = append(out, held)
	}
	// After the others are marked as retried: a pod whose retry is queued may move the plan on.
	for _, held := range skipped {
		if !h.stillArriving(held, waits) {
			delete(h.stuck, held)
			out = append(out, held)
		}
	}
	slices.Sort(out)
	return out
}

// endHolds ends the holds of uids and returns the held pods of their plans, sorted. Callers
// hold h.mu.
func (h *holdBook) endHolds(uids ...types.UID) []types.UID {
	for _, uid := range uids {
		delete(h.held, uid)
		delete(h.stuck, uid)
	}
	if len(h.held) == 0 || len(uids) == 0 {
		return nil
	}
	return h.heldOfPlans(sets.New(uids...))
}

// heldOfPlans returns the held pods of the plans of the pods in gone (and those of no known
// plan), sorted. Callers hold h.mu.
func (h *holdBook) heldOfPlans(gone sets.Set[types.UID]) []types.UID {
	var out []types.UID
	for held := range h.held {
		if gone.Has(held) {
			continue
		}
		// A pod of no known plan counts every waiting pod as its plan.
		if shares, known := h.plans.sharesPlan(held, gone); !known || shares {
			out = append(out, held)
		}
	}
	slices.Sort(out)
	return out
}

// planBook records which pods were planned together (one batch, one plan), so a pod held to
// its node can tell whether the rest of its plan is still on its way. Plans are known only to
// the process that made them; a pod whose wait was rebuilt from a NodeClaim's annotation (a
// restart, another replica) belongs to no known plan and treats every waiting pod as its plan.
// It is not safe for concurrent use: the hold book guards it.
type planBook struct {
	next   uint64
	planOf map[types.UID]uint64
	podsOf map[uint64]sets.Set[types.UID]
	// inFlight are, per plan, the pods that waited for other NodeClaims when it was made: the
	// solver counted them where they were planned (zones, hostnames), so the plan relies on
	// them arriving as much as on its own pods.
	inFlight map[uint64]sets.Set[types.UID]
	// later are, per plan, the plans made afterwards that counted its pods in flight: a pod
	// of the earlier plan relies on their pods as much (a zone one of them fills is a zone
	// the earlier pod's spread waits for), so the relation is kept both ways.
	later map[uint64]sets.Set[uint64]
}

func newPlanBook() *planBook {
	return &planBook{
		planOf: map[types.UID]uint64{}, podsOf: map[uint64]sets.Set[types.UID]{},
		inFlight: map[uint64]sets.Set[types.UID]{}, later: map[uint64]sets.Set[uint64]{},
	}
}

// begin returns the id of a new plan made while the pods in inFlight waited for NodeClaims.
func (b *planBook) begin(inFlight sets.Set[types.UID]) uint64 {
	b.next++
	if inFlight.Len() > 0 {
		b.inFlight[b.next] = inFlight
	}
	for uid := range inFlight {
		earlier, ok := b.planOf[uid]
		if !ok {
			continue
		}
		if b.later[earlier] == nil {
			b.later[earlier] = sets.New[uint64]()
		}
		b.later[earlier].Insert(b.next)
	}
	return b.next
}

// add records that pods belong to plan; a pod belongs to its latest plan only.
func (b *planBook) add(plan uint64, pods ...types.UID) {
	for _, uid := range pods {
		b.forget(uid)
		b.planOf[uid] = plan
		if b.podsOf[plan] == nil {
			b.podsOf[plan] = sets.New[types.UID]()
		}
		b.podsOf[plan].Insert(uid)
	}
}

// siblings returns the other pods of uid's plan, and whether its plan is known.
func (b *planBook) siblings(uid types.UID) ([]types.UID, bool) {
	plan, ok := b.planOf[uid]
	if !ok {
		return nil, false
	}
	out := make([]types.UID, 0, b.podsOf[plan].Len()+b.inFlight[plan].Len())
	for other := range b.podsOf[plan] {
		if other != uid {
			out = append(out, other)
		}
	}
	for other := range b.inFlight[plan] {
		if other != uid {
			out = append(out, other)
		}
	}
	for later := range b.later[plan] {
		for other := range b.podsOf[later] {
			if other != uid {
				out = append(out, other)
			}
		}
	}
	return out, true
}

// sharesPlan reports whether a pod of others other than uid is among uid's siblings, and
// whether uid's plan is known. It asks what siblings would list without building the list:
// every placement asks it for every held pod.
func (b *planBook) sharesPlan(uid types.UID, others sets.Set[types.UID]) (shares, known bool) {
	plan, ok := b.planOf[uid]
	if !ok {
		return false, false
	}
	for other := range others {
		if other == uid {
			continue
		}
		if b.inFlight[plan].Has(other) {
			return true, true
		}
		if otherPlan, ok := b.planOf[other]; ok && (otherPlan == plan || b.later[plan].Has(otherPlan)) {
			return true, true
		}
	}
	return false, true
}

func (b *planBook) forget(uid types.UID) {
	plan, ok := b.planOf[uid]
	if !ok {
		return
	}
	delete(b.planOf, uid)
	b.podsOf[plan].Delete(uid)
	if b.podsOf[plan].Len() == 0 {
		delete(b.podsOf, plan)
		delete(b.inFlight, plan)
		delete(b.later, plan)
	}
}
