// Package eventlimit keeps joinery's events from flooding the API server: a recorder that
// drops an event identical to one recorded for the same objects within the dedupe window, and
// rate-limits events of one reason about one object pair, so a pod stuck for hours or a node
// that cannot drain yields a handful of events, not one per retry. Both binaries wrap their
// recorders with it (Karpenter dedupes its events the same way, for 2 minutes by default).
package eventlimit

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
)

// Defaults: an identical event is repeated at most every DedupeWindow; events of one reason
// about one object pair come at most Burst at once, then one per RefillEvery.
const (
	DedupeWindow = 2 * time.Minute
	Burst        = 5
	RefillEvery  = time.Minute
	// cacheSize bounds the keys remembered; the least recently used are forgotten first.
	cacheSize = 10000
)

// Options tune a Recorder; zero values take the defaults.
type Options struct {
	DedupeWindow time.Duration
	Burst        int
	RefillEvery  time.Duration
	Clock        clock.PassiveClock
}

// Recorder wraps an events.EventRecorder with deduplication and rate limiting.
type Recorder struct {
	next    events.EventRecorder
	opts    Options
	mu      sync.Mutex
	seen    *cache.LRUExpireCache // identical events recorded within the window
	buckets *cache.LRUExpireCache // rate limiters by object pair and reason
	// Dropped counts the events left out, for tests and logs.
	dropped int
}

// New wraps next.
func New(next events.EventRecorder, opts Options) *Recorder {
	if opts.DedupeWindow <= 0 {
		opts.DedupeWindow = DedupeWindow
	}
	if opts.Burst <= 0 {
		opts.Burst = Burst
	}
	if opts.RefillEvery <= 0 {
		opts.RefillEvery = RefillEvery
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Recorder{next: next, opts: opts,
		seen: cache.NewLRUExpireCacheWithClock(cacheSize, opts.Clock), buckets: cache.NewLRUExpireCacheWithClock(cacheSize, opts.Clock)}
}

// Wrap is New with the defaults, the shape the binaries hand around.
func Wrap(next events.EventRecorder) events.EventRecorder { return New(next, Options{}) }

// Eventf records the event unless it repeats one recorded within the dedupe window or its
// object pair and reason have used up their rate.
func (r *Recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	if !r.allow(regarding, related, eventtype, reason, fmt.Sprintf(note, args...)) {
		return
	}
	r.next.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

func (r *Recorder) allow(regarding, related runtime.Object, eventtype, reason, message string) bool {
	objects := objectKey(regarding) + "\x00" + objectKey(related)
	identical := objects + "\x00" + eventtype + "\x00" + reason + "\x00" + message
	pair := objects + "\x00" + reason
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.seen.Get(identical); ok {
		r.dropped++
		return false
	}
	bucket, ok := r.buckets.Get(pair)
	if !ok {
		bucket = flowcontrol.NewTokenBucketPassiveRateLimiterWithClock(float32(1/r.opts.RefillEvery.Seconds()), r.opts.Burst, r.opts.Clock)
	}
	// A bucket idle long enough to be full again may be forgotten.
	r.buckets.Add(pair, bucket, time.Duration(r.opts.Burst)*r.opts.RefillEvery)
	if !bucket.(flowcontrol.PassiveRateLimiter).TryAccept() {
		r.dropped++
		return false
	}
	r.seen.Add(identical, struct{}{}, r.opts.DedupeWindow)
	return true
}

// Dropped is how many events were left out so far.
func (r *Recorder) Dropped() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropped
}

// objectKey identifies obj: its kind, namespace, name and UID ("" for nil).
func objectKey(obj runtime.Object) string {
	if obj == nil {
		return ""
	}
	kind := fmt.Sprintf("%T", obj)
	m, err := meta.Accessor(obj)
	if err != nil {
		return kind
	}
	return kind + "/" + m.GetNamespace() + "/" + m.GetName() + "/" + string(m.GetUID())
}
