package plugin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/simulation"
	"github.com/joinery-dev/joinery/simulation/buffer"
)

// A batch plans the replicas its workloads have not created yet (missingReplicaPods) and
// buys NodeClaims for them: each such replica is a slot on its NodeClaim, listed in the
// planned-pods annotation under its virtual pod's UID. When the real replica arrives,
// nothing holds it to that slot: kube-scheduler scores every node with room, and a roomy
// node planned for other pods (LeastAllocated) wins over the small node bought for it, which
// then ends with none of its pods. So a replica that arrives while its workload has a free
// slot takes it: it waits for that NodeClaim as if a batch had planned it there (PreFilter
// holds it), and the annotation lists it instead of its virtual pod, so the next batch counts
// it there and plans the virtual pod no more. The real Filters still decide: a replica its
// slot's node rejects is planned again like any pinned pod, and takes no other slot — except
// that a rejection by a Filter that counts pods (a zone spread's skew) is held while replicas
// are still to come and take the workload's other slots (holdPin), as it is while pods of its
// plan are still on their way.

// replicaSlotTTL bounds how long a slot waits for its replica. A controller creates a
// scale-up's pods within seconds to a minute; a slot left after that (the workload was
// scaled down meanwhile) must not pull a replica of a much later scale-up onto a node that
// has filled since.
const replicaSlotTTL = 2 * time.Minute

// replicaSlot is the place a batch planned, on a NodeClaim, for one replica not created yet.
type replicaSlot struct {
	workload  types.UID // the controller's UID
	nodeClaim string
	zone      string // the NodeClaim's zone, "" when it may launch in several
	index     int    // the virtual pod's index, which its UID derives from
	plan      uint64 // the batch's plan, which the replica joins (holds)
	expires   time.Time
	// desired is how many replicas the workload wanted when the slot was recorded (0: not
	// read). Once it wants fewer, the scale-up the slot was planned for is over.
	desired int32
}

// slotTaker is the workload of a pod that took a slot.
type slotTaker struct {
	namespace string
	workload  metav1.OwnerReference
}

// slotBook records the free replica slots by their virtual pods' UIDs, the workload of each
// pod that took one, and the pods that may take none (they left a slot's pin, or a plan's).
// It is not safe for concurrent use: the plugin's mu guards it.
type slotBook struct {
	slots      map[types.UID]replicaSlot
	byWorkload map[types.UID]sets.Set[types.UID]
	takenBy    map[types.UID]slotTaker
	declined   sets.Set[types.UID]
	// coming are the workloads whose slots the batch being published is creating: their
	// replicas wait for them (see PreFilter).
	coming sets.Set[types.UID]
}

func newSlotBook() *slotBook {
	return &slotBook{
		slots:      map[types.UID]replicaSlot{},
		byWorkload: map[types.UID]sets.Set[types.UID]{},
		takenBy:    map[types.UID]slotTaker{},
		declined:   sets.New[types.UID](),
		coming:     sets.New[types.UID](),
	}
}

// add records the slot of the virtual pod uid.
func (b *slotBook) add(uid types.UID, slot replicaSlot) {
	b.remove(uid)
	b.slots[uid] = slot
	if b.byWorkload[slot.workload] == nil {
		b.byWorkload[slot.workload] = sets.New[types.UID]()
	}
	b.byWorkload[slot.workload].Insert(uid)
}

func (b *slotBook) remove(uid types.UID) {
	slot, ok := b.slots[uid]
	if !ok {
		return
	}
	delete(b.slots, uid)
	b.byWorkload[slot.workload].Delete(uid)
	if b.byWorkload[slot.workload].Len() == 0 {
		delete(b.byWorkload, slot.workload)
	}
}

// take removes and returns a free slot of workload for a replica: the slot of the virtual pod
// want when it is set (a replica with an identity has exactly one), else one in the zone with
// the most free slots of the workload, on the NodeClaim with the most of them there, by name
// on a tie. The plan spread the replicas over zones and nodes as their constraints want; the
// zone with the most free slots is the one furthest behind, so filling it first keeps a
// zone spread's skew within bounds as the replicas arrive one by one. Expired slots are
// dropped on the way.
func (b *slotBook) take(workload types.UID, want types.UID, now time.Time) (types.UID, replicaSlot, bool) {
	uids := b.free(workload, now)
	if uids.Len() == 0 {
		return "", replicaSlot{}, false
	}
	if want != "" {
		slot, ok := b.slots[want]
		if !ok || slot.workload != workload {
			return "", replicaSlot{}, false
		}
		b.remove(want)
		return want, slot, true
	}
	perZone, perNodeClaim := map[string]int{}, map[string]int{}
	for uid := range uids {
		perZone[b.slots[uid].zone]++
		perNodeClaim[b.slots[uid].nodeClaim]++
	}
	var best types.UID
	for uid := range uids {
		if best == "" {
			best = uid
			continue
		}
		sx, sy := b.slots[uid], b.slots[best]
		if cmp.Or(
			cmp.Compare(perZone[sy.zone], perZone[sx.zone]),
			cmp.Compare(perNodeClaim[sy.nodeClaim], perNodeClaim[sx.nodeClaim]),
			strings.Compare(sx.nodeClaim, sy.nodeClaim),
			strings.Compare(string(uid), string(best))) < 0 {
			best = uid
		}
	}
	slot := b.slots[best]
	b.remove(best)
	return best, slot, true
}

// free returns workload's free slots, after dropping the expired ones.
func (b *slotBook) free(workload types.UID, now time.Time) sets.Set[types.UID] {
	for uid := range b.byWorkload[workload] { // remove deletes from the set ranged over: allowed
		if !now.Before(b.slots[uid].expires) {
			b.remove(uid)
		}
	}
	return b.byWorkload[workload]
}

// replicasComing reports whether pod took a slot, its workload has free slots left and it
// has not created every replica yet: more of them are still to come and take their places,
// and the Filters that count pods (a spread's skew) may say otherwise once they have. Once
// every replica exists, none is coming, and the workload's free slots are dropped: nothing
// will take them. Callers hold p.mu.
func (p *Plugin) replicasComing(pod types.UID) bool {
	taker, ok := p.slots.takenBy[pod]
	if !ok || p.slots.free(taker.workload.UID, p.clock.Now()).Len() == 0 || p.workloads == nil {
		return false
	}
	if w, ok := p.workloadOf(taker.namespace, &taker.workload); ok && missingCount(w) > 0 {
		return true
	}
	for uid := range p.slots.byWorkload[taker.workload.UID] {
		p.slots.remove(uid)
	}
	return false
}

// forgetPod forgets that pod took a slot, and that it may take none: it is bound or gone.
func (b *slotBook) forgetPod(pod types.UID) {
	delete(b.takenBy, pod)
	b.declined.Delete(pod)
}

// keepFreeSlots makes the next batch plan w's missing replicas, when they are alike (not
// listed one by one), as the virtual pods of its free slots first: a batch plans the indexes
// 0..missing-1, but the replicas that took slots took them at any index, so the next batch's
// indexes would no longer be the slots' — the free slots' room would look unplanned, and the
// virtual pods whose slots were taken would buy new NodeClaims beside it. Callers hold p.mu.
func (b *slotBook) keepFreeSlots(w *buffer.Workload, now time.Time) {
	if w.Replicas != nil || w.Missing <= 0 {
		return
	}
	free := b.free(w.Ref.UID, now)
	if free.Len() == 0 {
		return
	}
	indexes := make([]int, 0, free.Len())
	for uid := range free {
		indexes = append(indexes, b.slots[uid].index)
	}
	slices.Sort(indexes)
	indexes = indexes[:min(len(indexes), int(w.Missing))]
	used := sets.New(indexes...)
	for i := 0; len(indexes) < int(w.Missing); i++ {
		if !used.Has(i) {
			indexes = append(indexes, i)
		}
	}
	w.Replicas = make([]buffer.Replica, len(indexes))
	for i, index := range indexes {
		w.Replicas[i] = buffer.Replica{Index: index}
	}
}

// dropScaledDown forgets workload's free slots recorded when it wanted more replicas than
// desired, which it wants now. A scale-down ends the scale-up they were planned for: the pods
// the workload creates after it replace pods evicted or deleted (a consolidation's drain),
// and a slot would pin them to a node other than the one the disruption planned for them —
// an older node whose consolidateAfter each such pod restarts.
func (b *slotBook) dropScaledDown(workload types.UID, desired int32) {
	for uid := range b.byWorkload[workload] { // remove deletes from the set ranged over: allowed
		if b.slots[uid].desired > desired {
			b.remove(uid)
		}
	}
}

// dropNodeClaim forgets the slots on nodeClaim (it is gone).
func (b *slotBook) dropNodeClaim(nodeClaim string) {
	for uid, slot := range b.slots {
		if slot.nodeClaim == nodeClaim {
			b.remove(uid)
		}
	}
}

// slotsComing records the workloads whose missing replicas plan puts on new NodeClaims: while
// the batch publishes them, one after the other, their replicas wait for the slots instead
// of taking a node that registered meanwhile for other pods of the plan.
func (p *Plugin) slotsComing(plan *simulation.Plan) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, claim := range plan.NewNodeClaims {
		for _, pod := range claim.Pods {
			if workload, _, ok := buffer.MissingReplicaOf(pod); ok {
				p.slots.coming.Insert(workload)
			}
		}
	}
}

// awaitsSlots reports whether pod is a replica whose workload's slots the batch being
// published is creating. Callers hold p.mu.
func (p *Plugin) awaitsSlots(pod *corev1.Pod) bool {
	if p.slots.coming.Len() == 0 {
		return false
	}
	workload, _, ok := p.slotKey(pod)
	return ok && p.slots.coming.Has(workload)
}

// recordSlots records the missing replicas among pods, planned onto the new NodeClaim
// nodeClaim by plan, as slots for their real replicas.
func (p *Plugin) recordSlots(nc *karpv1.NodeClaim, plan uint64, pods []*corev1.Pod) {
	expires := p.clock.Now().Add(replicaSlotTTL)
	zone := nodeClaimZone(nc)
	desired := map[types.UID]int32{} // read once per workload
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pod := range pods {
		workload, index, ok := buffer.MissingReplicaOf(pod)
		if !ok {
			continue
		}
		if _, read := desired[workload]; !read {
			desired[workload], _ = p.desiredReplicas(pod.Namespace, metav1.GetControllerOfNoCopy(pod))
		}
		p.slots.add(pod.UID, replicaSlot{workload: workload, nodeClaim: nc.Name, zone: zone, index: index, plan: plan, expires: expires, desired: desired[workload]})
	}
}

// dropSlotsScaledDown drops the free slots of pod's workload that were planned before it was
// scaled down (slotBook.dropScaledDown). Callers hold p.mu.
func (p *Plugin) dropSlotsScaledDown(pod *corev1.Pod, workload types.UID) {
	if p.slots.byWorkload[workload].Len() == 0 {
		return
	}
	if desired, ok := p.desiredReplicas(pod.Namespace, metav1.GetControllerOfNoCopy(pod)); ok {
		p.slots.dropScaledDown(workload, desired)
	}
}

// nodeClaimZone is the one zone nc may launch in, "" when it may launch in several.
func nodeClaimZone(nc *karpv1.NodeClaim) string {
	if zone, ok := nc.Labels[corev1.LabelTopologyZone]; ok {
		return zone
	}
	for _, r := range nc.Spec.Requirements {
		if r.Key == corev1.LabelTopologyZone && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			return r.Values[0]
		}
	}
	return ""
}

// takeSlot makes pod, which waits for no NodeClaim, take a free slot of its workload, and
// returns the slot's NodeClaim and virtual pod; ok is false when it takes none. A pod of the
// batch being planned takes none: that batch plans it, and taking a slot in another zone
// while the NodeClaim planned for it in its own is dropped would leave the zones as the plan
// did not count them. The caller holds p.mu, and calls slotTaken once it has let go of it.
func (p *Plugin) takeSlot(pod *corev1.Pod) (nodeClaim string, virtual types.UID, ok bool) {
	if len(p.slots.slots) == 0 {
		return "", "", false
	}
	workload, want, ok := p.slotKey(pod)
	if !ok {
		return "", "", false
	}
	p.dropSlotsScaledDown(pod, workload)
	virtual, slot, ok := p.slots.take(workload, want, p.clock.Now())
	if !ok {
		return "", "", false
	}
	p.refs[pod.UID] = types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	p.slots.takenBy[pod.UID] = slotTaker{namespace: pod.Namespace, workload: *metav1.GetControllerOfNoCopy(pod)}
	p.waits.assign(slot.nodeClaim, pod.UID)
	p.holds.addToPlan(slot.plan, pod.UID)
	p.pending.remove(pod.UID)
	delete(p.unschedulable, pod.UID)
	return slot.nodeClaim, virtual, true
}

// slotFor reports whether a free slot waits for pod (what takeSlot would take, outside a
// batch). Callers hold p.mu.
func (p *Plugin) slotFor(pod *corev1.Pod) bool {
	workload, want, ok := p.slotKey(pod)
	if !ok {
		return false
	}
	p.dropSlotsScaledDown(pod, workload)
	free := p.slots.free(workload, p.clock.Now())
	if want != "" {
		return free.Has(want)
	}
	return free.Len() > 0
}

// retryForSlots retries the pending pods whose workloads have free slots: replicas created
// while the batch that made the slots was planned went through PostFilter before the slots
// existed and wait in the unschedulable queue for the next batch, which would plan them
// elsewhere and leave their slots empty. Retried, they take them (PreFilter).
func (p *Plugin) retryForSlots(ctx context.Context) {
	p.mu.Lock()
	if len(p.slots.slots) == 0 {
		p.mu.Unlock()
		return
	}
	var retry []types.UID
	for _, entry := range p.pending.list() {
		pod, err := p.pods.Pods(entry.namespace).Get(entry.name)
		if err != nil || pod.UID != entry.uid {
			continue
		}
		if p.slotFor(pod) {
			retry = append(retry, pod.UID)
		}
	}
	p.mu.Unlock()
	if len(retry) > 0 {
		klog.FromContext(ctx).V(1).Info("retrying pending replicas whose workloads have places planned for them", "pods", len(retry))
		p.activateUIDs(ctx, retry...)
	}
}

// slotKey returns the workload whose slots pod may take and the one slot it must take ("" when
// any will do); ok is false when pod takes none: it left a pin, is not served, is being
// deleted, is of the batch being planned, or has no controller or no identity to read.
// Callers hold p.mu.
func (p *Plugin) slotKey(pod *corev1.Pod) (workload, want types.UID, ok bool) {
	if p.slots.declined.Has(pod.UID) || p.planning.Has(pod.UID) || !p.names.Has(pod.Spec.SchedulerName) || pod.DeletionTimestamp != nil {
		return "", "", false
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return "", "", false
	}
	want, identified := replicaIdentity(pod, ref)
	return ref.UID, want, identified
}

// replicaIdentity returns the UID of the virtual pod that stands for pod when pod's
// controller creates replicas with an identity (a StatefulSet's ordinal, an Indexed Job's
// completion index), "" when any slot of the workload will do; identified is false when pod
// should have an identity but it cannot be read.
func replicaIdentity(pod *corev1.Pod, ref *metav1.OwnerReference) (want types.UID, identified bool) {
	switch workloadKind(ref) {
	case kindStatefulSet:
		index, ok := pod.Labels[appsv1.PodIndexLabel]
		if !ok {
			index = strings.TrimPrefix(pod.Name, ref.Name+"-")
		}
		ordinal, err := strconv.Atoi(index)
		if err != nil || ordinal < 0 {
			return "", false
		}
		return buffer.ReplicaUID(ref.UID, ordinal), true
	case kindJob:
		index, ok := pod.Annotations[batchv1.JobCompletionIndexAnnotation]
		if !ok {
			return "", true // a NonIndexed Job's pods are alike
		}
		completion, err := strconv.Atoi(index)
		if err != nil || completion < 0 {
			return "", false
		}
		return buffer.ReplicaUID(ref.UID, completion), true
	}
	return "", true
}

// leavePin ends uid's wait for its NodeClaim and its place in its plan, so that it is planned
// again, and returns the held pods to retry; it takes no replica slot from then on. Callers
// hold p.mu.
func (p *Plugin) leavePin(uid types.UID) []types.UID {
	p.waits.forgetPod(uid)
	retry := p.holds.unpin(uid)
	p.holds.leavePlan(uid)
	delete(p.slots.takenBy, uid)
	p.slots.declined.Insert(uid)
	return retry
}

// slotTaken tells pod that it waits for nodeClaim and has the slot writer record it on the
// NodeClaim: its planned-pods annotation lists pod instead of virtual.
func (p *Plugin) slotTaken(ctx context.Context, pod *corev1.Pod, nodeClaim string, virtual types.UID) {
	replicaSlotsTaken.WithLabelValues(p.profile).Inc()
	p.times.decided([]types.UID{pod.UID}, p.clock.Now())
	klog.FromContext(ctx).V(2).Info("replica takes the place planned for it before it was created", "pod", klog.KObj(pod), "NodeClaim", klog.KRef("", nodeClaim))
	p.event(pod, corev1.EventTypeNormal, reasonNominated, "Nominate", "Pod should schedule on: nodeclaim/%s", nodeClaim)
	// Expected before it is made: until the informer shows it, the pod's wait is not an
	// annotation lost (annotationLoss), and the next batch waits to count the pod there.
	p.launches.expectReplaced(nodeClaim, virtual, pod.UID)
	p.slotWrites.add(nodeClaim, virtual, pod)
	p.slotWrites.start.Do(func() { go p.writeSlots(ctx) })
}

// slotWriter holds the taken slots not yet recorded on their NodeClaims. The replicas of a
// scale-up take their slots a few milliseconds apart, often on the same NodeClaim: written one
// by one, each was a read and a patch of the whole NodeClaim, and most patches conflicted
// with the one before. The writer records all that accumulated on a NodeClaim in one patch.
type slotWriter struct {
	mu      sync.Mutex
	pending map[string]map[types.UID]*corev1.Pod // NodeClaim → virtual pod → the replica in its place
	wake    chan struct{}
	start   sync.Once
}

func newSlotWriter() *slotWriter {
	return &slotWriter{pending: map[string]map[types.UID]*corev1.Pod{}, wake: make(chan struct{}, 1)}
}

func (w *slotWriter) add(nodeClaim string, virtual types.UID, pod *corev1.Pod) {
	w.mu.Lock()
	if w.pending[nodeClaim] == nil {
		w.pending[nodeClaim] = map[types.UID]*corev1.Pod{}
	}
	w.pending[nodeClaim][virtual] = pod
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// take returns and forgets everything pending.
func (w *slotWriter) take() map[string]map[types.UID]*corev1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.pending
	w.pending = map[string]map[types.UID]*corev1.Pod{}
	return out
}

// slotWriteDelay is how long the slot writer collects taken slots before it writes them, on
// the wall clock rather than p.clock: it only batches writes and decides nothing.
const slotWriteDelay = 500 * time.Millisecond

// writeSlots records taken slots on their NodeClaims until ctx ends. A replica whose
// NodeClaim is gone or cannot be written leaves its slot and is retried at once.
func (p *Plugin) writeSlots(ctx context.Context) {
	logger := klog.FromContext(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.slotWrites.wake:
		}
		// Let the slots taken in the next moment join this write. A scale-up's replicas take
		// theirs ~50 ms apart, in turn on the NodeClaims of its zones: written as they came,
		// each was a patch of the whole NodeClaim (its planned-pods annotation lists every pod
		// planned onto it) that every watcher decoded again — most of the scheduler's JSON
		// decoding in the 500-pod scale-up. The replicas wait for their NodeClaims meanwhile
		// (p.waits); only the record, which a restart and the next batch read, comes later.
		select {
		case <-ctx.Done():
			return
		case <-time.After(slotWriteDelay):
		}
		pending := p.slotWrites.take()
		for _, nodeClaim := range slices.Sorted(maps.Keys(pending)) {
			swaps := pending[nodeClaim]
			err := p.writeSlotsTaken(ctx, nodeClaim, swaps)
			if err == nil || ctx.Err() != nil {
				continue
			}
			if !errors.Is(err, errNoLongerLaunching) {
				logger.Error(err, "recording replicas on the NodeClaim planned for them failed; planning them again", "NodeClaim", klog.KRef("", nodeClaim), "pods", len(swaps))
			}
			var retry []types.UID
			p.mu.Lock()
			for _, pod := range swaps {
				p.launches.abandonWrite(nodeClaim, pod.UID)
				if current, ok := p.waits.nodeClaimFor(pod.UID); ok && current == nodeClaim {
					retry = append(append(retry, p.leavePin(pod.UID)...), pod.UID)
				}
			}
			p.mu.Unlock()
			p.activateUIDs(ctx, retry...)
		}
	}
}

// writeSlotsTaken replaces each virtual pod of swaps by its replica in the planned-pods
// annotation of nodeClaim, re-reading it on conflict. A NodeClaim being deleted is
// errNoLongerLaunching; one whose node is up keeps the record too, since the solver counts a
// registered node's planned pods there until they bind.
func (p *Plugin) writeSlotsTaken(ctx context.Context, nodeClaim string, swaps map[types.UID]*corev1.Pod) error {
	virtual := slices.Collect(maps.Keys(swaps))
	replicas := make([]types.UID, 0, len(swaps))
	for _, pod := range swaps {
		replicas = append(replicas, pod.UID)
	}
	// The informer's copy first: the replicas of a scale-up take their slots on NodeClaims
	// the informer shows, and a read from it costs the API server nothing.
	return p.patchNodeClaim(ctx, nodeClaim, true, func(nc *karpv1.NodeClaim) (bool, error) {
		if nc.DeletionTimestamp != nil {
			return false, fmt.Errorf("NodeClaim %s: %w", nodeClaim, errNoLongerLaunching)
		}
		removed := simulation.RemovePlannedPods(nc, virtual...)
		added := simulation.AddPlannedPods(nc, replicas...)
		return removed || added, nil
	})
}
