package termination

import (
	"sync"
	"time"
)

const (
	evictionBackoffBase = time.Second
	evictionBackoffMax  = time.Minute
)

// backoff doubles the wait of a node whose evictions keep being refused, so a PDB that holds
// for long is not hammered. It lives in memory: after a restart a drain simply starts fast.
type backoff struct {
	mu       sync.Mutex
	attempts map[string]int
}

func newBackoff() *backoff { return &backoff{attempts: map[string]int{}} }

// next returns the wait before node's next eviction attempt and counts this one.
func (b *backoff) next(node string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.attempts[node]
	b.attempts[node] = n + 1
	wait := evictionBackoffBase << min(n, 16)
	return min(wait, evictionBackoffMax)
}

// reset forgets node's refused attempts.
func (b *backoff) reset(node string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.attempts, node)
}
