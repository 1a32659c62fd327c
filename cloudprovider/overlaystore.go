package cloudprovider

import (
	"fmt"
	"slices"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/joinery-dev/joinery/apis/karpenter/v1alpha1"
)

// NodeOverlays is the Overlay of the cluster's NodeOverlay objects: fed by a watch (EventHandler)
// or a list (Replace), it applies the current overlays to whatever instance types a provider
// lists, so a change takes effect on the next listing without a restart. Results are cached per
// NodePool until the overlays or the listed types change. It is safe for concurrent use.
type NodeOverlays struct {
	mu       sync.Mutex
	overlays map[string]storedOverlay
	sorted   []*compiledOverlay // by weight, then name; nil when there is none
	invalid  map[string]error
	version  uint64
	cache    map[string]*overlayResult
}

// storedOverlay is one NodeOverlay as last seen: its identity, generation and devices
// annotation say whether a new sighting changes anything (an annotation change leaves the
// generation as it was).
type storedOverlay struct {
	uid        types.UID
	generation int64
	devices    *string          // the DevicesAnnotationKey annotation; nil when absent
	compiled   *compiledOverlay // nil when invalid
}

// overlayResult is the cached evaluation for one NodePool.
type overlayResult struct {
	version uint64
	in      InstanceTypes
	ev      evaluation
}

var _ Overlay = (*NodeOverlays)(nil)

// NewNodeOverlays returns an empty set.
func NewNodeOverlays() *NodeOverlays {
	return &NodeOverlays{overlays: map[string]storedOverlay{}, invalid: map[string]error{}, cache: map[string]*overlayResult{}}
}

// Set adds or replaces o. An overlay that cannot be parsed (input the CRD's validation would
// refuse) is left out and reported by Invalid.
func (s *NodeOverlays) Set(o *v1alpha1.NodeOverlay) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setLocked(o)
}

func (s *NodeOverlays) setLocked(o *v1alpha1.NodeOverlay) bool {
	devices := devicesAnnotation(o)
	if old, ok := s.overlays[o.Name]; ok && old.uid == o.UID && old.generation == o.Generation && o.Generation != 0 &&
		ptr.Equal(old.devices, devices) {
		return false
	}
	compiled, err := compileOverlay(o)
	s.overlays[o.Name] = storedOverlay{uid: o.UID, generation: o.Generation, devices: devices, compiled: compiled}
	delete(s.invalid, o.Name)
	if err != nil {
		s.invalid[o.Name] = err
	}
	s.changedLocked()
	return true
}

// devicesAnnotation is o's DevicesAnnotationKey annotation, nil when it has none.
func devicesAnnotation(o *v1alpha1.NodeOverlay) *string {
	if v, ok := o.Annotations[DevicesAnnotationKey]; ok {
		return &v
	}
	return nil
}

// OverlayChanged reports whether updated may apply differently from old: its spec (the
// generation) or its devices annotation changed; a status write changes neither.
func OverlayChanged(old, updated *v1alpha1.NodeOverlay) bool {
	return old.Generation != updated.Generation || !ptr.Equal(devicesAnnotation(old), devicesAnnotation(updated))
}

// Delete removes the overlay named name.
func (s *NodeOverlays) Delete(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deleteLocked(name)
}

func (s *NodeOverlays) deleteLocked(name string) {
	if _, ok := s.overlays[name]; !ok {
		return
	}
	delete(s.overlays, name)
	delete(s.invalid, name)
	s.changedLocked()
}

// Replace makes the set exactly overlays (a fresh list), keeping what did not change.
func (s *NodeOverlays) Replace(overlays []v1alpha1.NodeOverlay) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keep := map[string]bool{}
	for i := range overlays {
		keep[overlays[i].Name] = true
		s.setLocked(&overlays[i])
	}
	for name := range s.overlays {
		if !keep[name] {
			s.deleteLocked(name)
		}
	}
}

func (s *NodeOverlays) changedLocked() {
	s.version++
	clear(s.cache)
	s.sorted = nil
	for _, o := range s.overlays {
		if o.compiled != nil {
			s.sorted = append(s.sorted, o.compiled)
		}
	}
	slices.SortFunc(s.sorted, byWeightThenName)
}

// Apply implements Overlay.
func (s *NodeOverlays) Apply(nodePool string, its InstanceTypes) InstanceTypes {
	s.mu.Lock()
	if len(s.sorted) == 0 {
		s.mu.Unlock()
		return its
	}
	if r, ok := s.cache[nodePool]; ok && r.version == s.version && slices.Equal(r.in, its) {
		s.mu.Unlock()
		return slices.Clone(r.ev.its)
	}
	overlays, version := s.sorted, s.version
	s.mu.Unlock()

	// Evaluate outside the lock: overlays are immutable once compiled.
	ev := evaluate(overlays, nodePool, its)
	s.mu.Lock()
	if s.version == version {
		s.cache[nodePool] = &overlayResult{version: version, in: slices.Clone(its), ev: ev}
	}
	s.mu.Unlock()
	return slices.Clone(ev.its)
}

// Conflicts returns, for each overlay that lost a field to an overlay of the same weight with
// a different value in the latest evaluation of any of nodePools, a message naming the winner
// (the alphabetically first, when it lost to several). Only NodePools whose instance types
// were applied since the overlays last changed count.
func (s *NodeOverlays) Conflicts(nodePools ...string) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	lost := map[string][]overlayConflict{}
	for _, np := range nodePools {
		r, ok := s.cache[np]
		if !ok || r.version != s.version {
			continue
		}
		for _, c := range r.ev.conflicts {
			lost[c.loser] = append(lost[c.loser], c)
		}
	}
	out := make(map[string]string, len(lost))
	for name, cs := range lost {
		sort.Slice(cs, func(i, j int) bool {
			if cs[i].winner != cs[j].winner {
				return cs[i].winner < cs[j].winner
			}
			return cs[i].field < cs[j].field
		})
		out[name] = fmt.Sprintf("conflict with overlay %s (%s, same weight, different value)", cs[0].winner, cs[0].field)
	}
	return out
}

// Invalid returns the overlays left out because they could not be parsed, with why.
func (s *NodeOverlays) Invalid() map[string]error {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]error, len(s.invalid))
	for k, v := range s.invalid {
		out[k] = v
	}
	return out
}

// EventHandler keeps the set current from an informer of NodeOverlays.
func (s *NodeOverlays) EventHandler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if o, ok := obj.(*v1alpha1.NodeOverlay); ok {
				s.Set(o)
			}
		},
		UpdateFunc: func(_, obj any) {
			if o, ok := obj.(*v1alpha1.NodeOverlay); ok {
				s.Set(o)
			}
		},
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if o, ok := obj.(*v1alpha1.NodeOverlay); ok {
				s.Delete(o.Name)
			}
		},
	}
}
