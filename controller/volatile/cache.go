package volatile

import (
	"context"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Cache holds the predictions by (namespace, owner UID). It is safe for concurrent use.
type Cache struct {
	mu      sync.RWMutex
	entries map[Key]Prediction
}

// NewCache returns an empty cache.
func NewCache() *Cache { return &Cache{entries: map[Key]Prediction{}} }

// Get returns the prediction for key.
func (c *Cache) Get(key Key) (Prediction, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	p, ok := c.entries[key]
	return p, ok
}

// Put stores p for key.
func (c *Cache) Put(key Key, p Prediction) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[key] = p
}

// Delete forgets key (the owner is gone).
func (c *Cache) Delete(key Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, key)
}

// Fresh returns the prediction for owner when it was made from owner's current template; a
// prediction of an older template is stale and dropped.
func (c *Cache) Fresh(owner *Owner) (Prediction, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.entries[owner.Key]
	if ok && p.TemplateHash != owner.TemplateHash {
		delete(c.entries, owner.Key)
		return Prediction{}, false
	}
	return p, ok
}

// Predict sets the requests of pod, a copy the caller owns (disruption's simulated pod), to
// its owner's cached prediction, and reports whether it did. Pods without the annotation,
// without a controller or without a prediction keep their requests.
func (c *Cache) Predict(pod *corev1.Pod) bool {
	if !Volatile(pod) {
		return false
	}
	key, ok := keyOf(pod)
	if !ok {
		return false
	}
	p, ok := c.Get(key)
	if !ok {
		return false
	}
	p.apply(pod)
	return true
}

func keyOf(pod *corev1.Pod) (Key, bool) {
	for _, ref := range pod.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			return Key{Namespace: pod.Namespace, OwnerUID: ref.UID}, true
		}
	}
	return Key{}, false
}

// Verifier re-runs the dry-run for the volatile pods a disruption command would evict and
// compares it with the prediction the simulation used.
type Verifier struct {
	Predictor *Predictor
	Cache     *Cache
}

var rejections = prometheus.NewCounter(prometheus.CounterOpts{
	Namespace: "joinery", Subsystem: "voluntary_disruption", Name: "volatile_requests_rejections_total",
	Help: "Disruption commands rejected because a fresh dry-run of a volatile pod's owner disagreed with the prediction the simulation used.",
})

func init() { crmetrics.Registry.MustRegister(rejections) }

// Verify dry-runs the owner of every volatile pod among pods once and returns why the command
// must be rejected ("" when every prediction holds). A changed prediction replaces the cached
// one, so the next simulation uses it; a failed dry-run rejects too (better a later command
// than an eviction on a guess).
func (v *Verifier) Verify(ctx context.Context, pods []*corev1.Pod) (string, error) {
	seen := map[types.UID]bool{}
	for _, pod := range pods {
		if !Volatile(pod) {
			continue
		}
		owner, err := v.Predictor.OwnerOf(ctx, pod)
		if err != nil {
			return "", err
		}
		if owner == nil || seen[owner.Key.OwnerUID] {
			continue
		}
		seen[owner.Key.OwnerUID] = true
		used, cached := v.Cache.Fresh(owner)
		fresh, err := v.Predictor.DryRun(ctx, owner)
		if err != nil {
			rejections.Inc()
			return fmt.Sprintf("volatile requests of %s %s/%s could not be checked: %v", owner.Ref.Kind, owner.Key.Namespace, owner.Ref.Name, err), nil
		}
		v.Cache.Put(owner.Key, fresh)
		if !cached {
			used = predictionOf(pod, owner.TemplateHash) // the simulation used the pod's own requests
		}
		if !used.Equal(fresh) {
			rejections.Inc()
			return fmt.Sprintf("volatile requests of %s %s/%s changed: simulated with %s, a fresh dry-run gives %s",
				owner.Ref.Kind, owner.Key.Namespace, owner.Ref.Name, used, fresh), nil
		}
	}
	return "", nil
}
