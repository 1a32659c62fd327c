package simulation

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/joinery-dev/joinery/scheduling"
)

// PodInfos keeps a PodInfo (parsed affinity terms, computed requests) per assigned pod for
// the snapshot's Resets, so loading a cluster does not parse and sum every pod again.
//
// A pod version is its UID and resourceVersion: the API server gives a changed pod a new
// resourceVersion, so the same pair is the same content even when it arrives as another
// object (the manager's cache hands each List a deep copy). A pod without a resourceVersion
// (tests, files) is matched by object, and must not be changed in place.
//
// Reset fills it with the pods it loads; Observe fills it ahead of time from the informers'
// events, so even the first load after start finds the pods' PodInfos built. An entry that
// no Reset loaded and no event touched since the Reset before is dropped. Safe for
// concurrent use.
type PodInfos struct {
	mu    sync.Mutex
	byUID map[types.UID]*podInfoEntry
	// resets counts the Resets that used the cache.
	resets uint64
}

type podInfoEntry struct {
	pod  *corev1.Pod
	info *framework.PodInfo
	// seen is the last Reset that loaded the pod, or the next one after an event.
	seen uint64
}

// matches reports whether e was built for pod's version.
func (e *podInfoEntry) matches(pod *corev1.Pod) bool {
	if e.pod == pod {
		return true
	}
	return pod.ResourceVersion != "" && e.pod.ResourceVersion == pod.ResourceVersion && e.pod.UID == pod.UID
}

// Observe builds the PodInfo of pod's version now if a Reset would load it (assigned, not
// finished) and none is kept. For the informers' add and update events.
func (p *PodInfos) Observe(pod *corev1.Pod) {
	if p == nil || pod == nil || pod.UID == "" || pod.Spec.NodeName == "" || scheduling.PodFinished(pod) {
		return
	}
	p.mu.Lock()
	e := p.byUID[pod.UID]
	if e != nil && e.matches(pod) {
		e.seen = p.resets + 1
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	// Built outside the lock: a Reset may be loading meanwhile.
	info := newPodInfo(pod)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byUID == nil {
		p.byUID = map[types.UID]*podInfoEntry{}
	}
	p.byUID[pod.UID] = &podInfoEntry{pod: pod, info: info, seen: p.resets + 1}
}

// Forget drops pod's PodInfo. For the informers' delete events.
func (p *PodInfos) Forget(pod *corev1.Pod) {
	if p == nil || pod == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.byUID, pod.UID)
}

// Len is the number of PodInfos kept.
func (p *PodInfos) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.byUID)
}

// load returns the PodInfo of each of pods (nil for a pod without a UID), reusing the kept
// ones, and then drops the entries neither this load nor an event since the last one used
// (a load of no pods keeps them all).
func (p *PodInfos) load(pods []*corev1.Pod) []*framework.PodInfo {
	if len(pods) == 0 {
		// The solver empties the snapshot after a plan to release it: no reason to forget
		// what the informers' events built.
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.resets++
	if p.byUID == nil {
		p.byUID = make(map[types.UID]*podInfoEntry, len(pods))
	}
	out := make([]*framework.PodInfo, len(pods))
	for i, pod := range pods {
		if pod.UID == "" {
			continue
		}
		e := p.byUID[pod.UID]
		switch {
		case e == nil || !e.matches(pod):
			e = &podInfoEntry{pod: pod, info: newPodInfo(pod)}
			p.byUID[pod.UID] = e
		case e.pod != pod:
			// The same version in another object: share the parsed content, point at the
			// object loaded, as every reader of the snapshot expects.
			info := *e.info
			info.Pod = pod
			e.pod, e.info = pod, &info
		}
		e.seen = p.resets
		out[i] = e.info
	}
	for uid, e := range p.byUID {
		if e.seen < p.resets {
			delete(p.byUID, uid)
		}
	}
	return out
}

// newPodInfo parses pod and computes its requests, so the PodInfo is complete before it is
// shared (NodeInfo.AddPodInfo would otherwise compute them on first use). As NodeInfo.AddPod
// does, an affinity term that does not parse is ignored.
func newPodInfo(pod *corev1.Pod) *framework.PodInfo {
	info, _ := framework.NewPodInfo(pod)
	info.CalculateResource()
	return info
}
