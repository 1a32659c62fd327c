package plugin

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	karpv1 "github.com/joinery-dev/joinery/apis/karpenter/v1"
	"github.com/joinery-dev/joinery/simulation"
)

// launchState is what the plugin knows of a NodeClaim its pods wait for.
type launchState struct {
	nodeName    string // the registered node, once there is one
	providerID  string // the launched instance, once there is one
	initialized bool
	taints      []corev1.Taint // the NodeClaim's own taints, which its node keeps
}

// launchTracker follows the NodeClaims as the plugin's informer shows them: each one's node
// and provider ID (to find a NodeClaim by its node), the pods its planned-pods annotation
// lists, and the annotation writes of this process the informer does not show yet. It is the
// cluster's side of a plan; which pods wait for what is the plugin's (the wait book), built
// from it.
//
// It has its own lock because the informer's handlers, Filter and the batch loop's
// read-your-writes wait ask it far more often than they touch the pods' state. Lock order:
// a caller holding Plugin.mu may call it; it calls nothing outside itself while it holds its
// lock, so it never waits for Plugin.mu.
type launchTracker struct {
	mu       sync.Mutex
	launches map[string]launchState // NodeClaims by name
	// nodeClaimOfNode and nodeClaimOfProvider find a NodeClaim by its node's name and by its
	// provider ID: the node can become schedulable (its unregistered taint lifted) before the
	// NodeClaim names it.
	nodeClaimOfNode, nodeClaimOfProvider map[string]string
	written                              map[string]sets.Set[types.UID] // NodeClaim writes the informer does not show yet
	observed                             map[string]sets.Set[types.UID] // planned-pods entries the informer showed last, by NodeClaim
	claimedBy                            map[types.UID]string           // planned-pods annotation entries of launching NodeClaims
}

func newLaunchTracker() *launchTracker {
	return &launchTracker{
		launches:            map[string]launchState{},
		nodeClaimOfNode:     map[string]string{},
		nodeClaimOfProvider: map[string]string{},
		written:             map[string]sets.Set[types.UID]{},
		observed:            map[string]sets.Set[types.UID]{},
		claimedBy:           map[types.UID]string{},
	}
}

// launched returns what is known of the NodeClaim name: the zero launchState when the
// informer has not shown it (or it is gone).
func (t *launchTracker) launched(name string) launchState {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.launches[name]
}

// nodeOf returns the name of nodeClaim's registered node, "" until it has one.
func (t *launchTracker) nodeOf(nodeClaim string) string {
	return t.launched(nodeClaim).nodeName
}

// nodeClaimOf returns the NodeClaim whose node is node, "" when none is known: by the name the
// NodeClaim records, or before that by its provider ID or a name equal to the NodeClaim's (the
// scheduler may see the node schedulable before the NodeClaim names it).
func (t *launchTracker) nodeClaimOf(node *corev1.Node) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if name, ok := t.nodeClaimOfNode[node.Name]; ok {
		return name
	}
	if node.Spec.ProviderID != "" {
		if name, ok := t.nodeClaimOfProvider[node.Spec.ProviderID]; ok {
			return name
		}
	}
	if _, ok := t.launches[node.Name]; ok {
		return node.Name
	}
	return ""
}

// observe records nc as the informer shows it and returns what was known of it before and
// what is now.
func (t *launchTracker) observe(nc *karpv1.NodeClaim) (before, now launchState) {
	now = launchState{
		nodeName:    nc.Status.NodeName,
		providerID:  nc.Status.ProviderID,
		initialized: meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized),
		taints:      nc.Spec.Taints,
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	before = t.launches[nc.Name]
	t.launches[nc.Name] = now
	if nc.Status.NodeName != "" {
		t.nodeClaimOfNode[nc.Status.NodeName] = nc.Name
	}
	if nc.Status.ProviderID != "" {
		t.nodeClaimOfProvider[nc.Status.ProviderID] = nc.Name
	}
	return before, now
}

// deleted forgets the NodeClaim name, which the informer shows deleted: its node, its
// provider ID and its writes. Its annotation entries go with the waits they made (dropClaims,
// under the plugin's lock).
func (t *launchTracker) deleted(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	launch := t.launches[name]
	if t.nodeClaimOfNode[launch.nodeName] == name {
		delete(t.nodeClaimOfNode, launch.nodeName)
	}
	if t.nodeClaimOfProvider[launch.providerID] == name {
		delete(t.nodeClaimOfProvider, launch.providerID)
	}
	delete(t.launches, name)
	delete(t.written, name)
	delete(t.observed, name)
}

// claim records that the planned-pods annotation of the launching NodeClaim nodeClaim lists
// pods. A pod is claimed by one NodeClaim at a time: the latest annotation seen wins.
func (t *launchTracker) claim(nodeClaim string, pods []types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, uid := range pods {
		t.claimedBy[uid] = nodeClaim
	}
}

// claimOf returns the launching NodeClaim whose planned-pods annotation lists uid.
func (t *launchTracker) claimOf(uid types.UID) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	name, ok := t.claimedBy[uid]
	return name, ok
}

// dropClaims forgets the annotation entries of nodeClaim (it is gone or no longer launching).
func (t *launchTracker) dropClaims(nodeClaim string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for uid, name := range t.claimedBy {
		if name == nodeClaim {
			delete(t.claimedBy, uid)
		}
	}
}

// dropClaim forgets the annotation entry of the pod uid (it was bound or deleted).
func (t *launchTracker) dropClaim(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.claimedBy, uid)
}

// expectWritten records that this process wrote pods into nodeClaim's planned-pods annotation
// (creating it, or adding to it); until the informer shows the write, the next batch waits.
func (t *launchTracker) expectWritten(nodeClaim string, pods []types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.observed[nodeClaim].HasAll(pods...) {
		return // the informer showed the write before the writer got here
	}
	if t.written[nodeClaim] == nil {
		t.written[nodeClaim] = sets.New[types.UID]()
	}
	t.written[nodeClaim].Insert(pods...)
}

// expectReplaced records that this process replaces old with pod in nodeClaim's planned-pods
// annotation (a replica taking its slot swaps it for its virtual pod): a write of old the
// informer has not shown yet is no longer expected — the annotation will never list it — and
// the write of pod is. Expecting both, a batch right after a replica took its slot on a
// NodeClaim just created waited writeObserveTimeout for old, then planned without the
// NodeClaim's room and bought it again.
func (t *launchTracker) expectReplaced(nodeClaim string, old, pod types.UID) {
	t.mu.Lock()
	if want, ok := t.written[nodeClaim]; ok {
		want.Delete(old)
		if want.Len() == 0 {
			delete(t.written, nodeClaim)
		}
	}
	t.mu.Unlock()
	t.expectWritten(nodeClaim, []types.UID{pod})
}

// abandonWrite forgets the expected write of pod to nodeClaim: it failed.
func (t *launchTracker) abandonWrite(nodeClaim string, pod types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if want, ok := t.written[nodeClaim]; ok {
		want.Delete(pod)
		if want.Len() == 0 {
			delete(t.written, nodeClaim)
		}
	}
}

// observeWrites records nc's planned pods as the informer shows them and clears the writes to
// nc it now shows.
func (t *launchTracker) observeWrites(nc *karpv1.NodeClaim) {
	t.mu.Lock()
	defer t.mu.Unlock()
	planned := sets.New(simulation.PlannedPods(nc)...)
	t.observed[nc.Name] = planned
	want, ok := t.written[nc.Name]
	if !ok {
		return
	}
	if nc.DeletionTimestamp != nil || planned.IsSuperset(want) {
		delete(t.written, nc.Name)
	}
}

// writesUnobserved returns how many NodeClaims this process wrote that the informer does not
// show yet.
func (t *launchTracker) writesUnobserved() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.written)
}

// writeUnobserved reports whether the informer does not show yet this process's write to
// nodeClaim.
func (t *launchTracker) writeUnobserved(nodeClaim string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.written[nodeClaim]
	return ok
}
