package plugin

import (
	"cmp"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// pendingPod is a pod that needs capacity: it failed every Filter (or found no node at all).
type pendingPod struct {
	uid       types.UID
	namespace string
	name      string
	// reasons summarises why the Filters rejected it, for logs.
	reasons string
	since   time.Time
}

// pendingSet holds the pods the next batch plans for. It is not safe for concurrent use; the
// plugin guards it.
type pendingSet struct {
	pods map[types.UID]pendingPod
}

func newPendingSet() *pendingSet { return &pendingSet{pods: map[types.UID]pendingPod{}} }

// add records pod, keeping the time it first became pending. It reports whether pod is new.
func (s *pendingSet) add(pod *corev1.Pod, reasons string, now time.Time) bool {
	entry, ok := s.pods[pod.UID]
	if !ok {
		entry = pendingPod{uid: pod.UID, namespace: pod.Namespace, name: pod.Name, since: now}
	}
	if reasons != "" {
		entry.reasons = reasons
	}
	s.pods[pod.UID] = entry
	return !ok
}

// remove drops uid and returns what was recorded for it.
func (s *pendingSet) remove(uid types.UID) (pendingPod, bool) {
	entry, ok := s.pods[uid]
	delete(s.pods, uid)
	return entry, ok
}

// restore puts back an entry remove returned.
func (s *pendingSet) restore(entry pendingPod) { s.pods[entry.uid] = entry }

func (s *pendingSet) has(uid types.UID) bool {
	_, ok := s.pods[uid]
	return ok
}

func (s *pendingSet) len() int { return len(s.pods) }

// list returns the pending pods, longest-waiting first, so a batch is reproducible.
func (s *pendingSet) list() []pendingPod {
	out := make([]pendingPod, 0, len(s.pods))
	for _, entry := range s.pods {
		out = append(out, entry)
	}
	slices.SortFunc(out, func(a, b pendingPod) int {
		return cmp.Or(a.since.Compare(b.since), cmp.Compare(a.namespace, b.namespace),
			cmp.Compare(a.name, b.name), cmp.Compare(a.uid, b.uid))
	})
	return out
}
