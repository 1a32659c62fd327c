package plugin

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/types"
)

// waitBook records which pods wait for which launching NodeClaim, so such a pod is neither
// planned again (no duplicate capacity) nor reported as merely pending. It mirrors the
// NodeClaims' planned-pods annotations, plus what this process published and has not yet
// seen come back through its informer. It is not safe for concurrent use.
type waitBook struct {
	nodeClaimOf map[types.UID]string
	podsOf      map[string]map[types.UID]struct{}
}

func newWaitBook() *waitBook {
	return &waitBook{nodeClaimOf: map[types.UID]string{}, podsOf: map[string]map[types.UID]struct{}{}}
}

// assign records that pods wait for nodeClaim. A pod waits for one NodeClaim at a time: the
// latest plan wins.
func (w *waitBook) assign(nodeClaim string, pods ...types.UID) {
	for _, uid := range pods {
		w.forgetPod(uid)
		w.nodeClaimOf[uid] = nodeClaim
		if w.podsOf[nodeClaim] == nil {
			w.podsOf[nodeClaim] = map[types.UID]struct{}{}
		}
		w.podsOf[nodeClaim][uid] = struct{}{}
	}
}

// nodeClaimFor returns the NodeClaim uid waits for.
func (w *waitBook) nodeClaimFor(uid types.UID) (string, bool) {
	name, ok := w.nodeClaimOf[uid]
	return name, ok
}

// podsWaitingFor returns the pods that wait for nodeClaim, sorted.
func (w *waitBook) podsWaitingFor(nodeClaim string) []types.UID {
	return slices.Sorted(maps.Keys(w.podsOf[nodeClaim]))
}

// forgetPod ends uid's wait, e.g. because it was scheduled.
func (w *waitBook) forgetPod(uid types.UID) {
	name, ok := w.nodeClaimOf[uid]
	if !ok {
		return
	}
	delete(w.nodeClaimOf, uid)
	delete(w.podsOf[name], uid)
	if len(w.podsOf[name]) == 0 {
		delete(w.podsOf, name)
	}
}

// forgetNodeClaim ends every wait for nodeClaim (it is gone, or its node is up) and returns
// the pods that waited.
func (w *waitBook) forgetNodeClaim(nodeClaim string) []types.UID {
	pods := w.podsWaitingFor(nodeClaim)
	for _, uid := range pods {
		delete(w.nodeClaimOf, uid)
	}
	delete(w.podsOf, nodeClaim)
	return pods
}
