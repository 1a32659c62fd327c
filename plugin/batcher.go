package plugin

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Batcher times provisioning windows: a window opens with the first Trigger and closes when
// no Trigger came for idle, or max after it opened, whichever is first. Pods that fail
// scheduling together are thus planned together, which packs them onto fewer nodes, while
// a steady trickle still gets capacity within max.
type Batcher struct {
	clock     clock.Clock
	idle, max time.Duration

	mu          sync.Mutex
	first, last time.Time // zero while no window is open
	// opened wakes Wait when a window opens. Later Triggers only move the idle deadline
	// later, so Wait re-reads them when its timer fires instead of being woken for each.
	opened chan struct{}
}

// NewBatcher returns a Batcher with the given idle and max durations.
func NewBatcher(c clock.Clock, idle, max time.Duration) *Batcher {
	return &Batcher{clock: c, idle: idle, max: max, opened: make(chan struct{}, 1)}
}

// Trigger opens a window, or extends the open one by idle. It never blocks.
func (b *Batcher) Trigger() {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	b.last = now
	if b.first.IsZero() {
		b.first = now
		select {
		case b.opened <- struct{}{}:
		default:
		}
	}
}

// Wait blocks until a window opens and closes, and returns true; it returns false when ctx
// ends first. Triggers while the caller works on a batch open the next window.
func (b *Batcher) Wait(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-b.opened:
	}
	for {
		wait, closed := b.untilClose()
		if closed {
			return true
		}
		timer := b.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return false
		case <-timer.C():
		}
	}
}

// untilClose returns how long the open window has left, or closes it when none is left.
func (b *Batcher) untilClose() (time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	deadline := b.last.Add(b.idle)
	if maxDeadline := b.first.Add(b.max); maxDeadline.Before(deadline) {
		deadline = maxDeadline
	}
	now := b.clock.Now()
	if now.Before(deadline) {
		return deadline.Sub(now), false
	}
	b.first, b.last = time.Time{}, time.Time{}
	return 0, true
}
