package plugin

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// probe returns the status code the tracker answers a readiness probe with.
func probe(t *testing.T, s *SyncTracker) int {
	t.Helper()
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	return rec.Code
}

// TestNotReadyUntilEveryProvisionerSynced (issue 17, defect 7): the readiness the tracker
// serves stays 503 until each plugin that provisions has synced its caches; a plugin without a
// planner syncs nothing and is not waited for.
func TestNotReadyUntilEveryProvisionerSynced(t *testing.T) {
	tracker := NewSyncTracker()

	if got := probe(t, tracker); got != http.StatusServiceUnavailable {
		t.Fatalf("before any plugin: %d, want 503", got)
	}
	newTrackedTestPlugin(t, false, tracker) // reports pending pods only: nothing to sync
	first, second := newTrackedTestPlugin(t, true, tracker).plugin, newTrackedTestPlugin(t, true, tracker).plugin

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	release := make(chan struct{})
	syncing := func(ctx context.Context) bool {
		select {
		case <-release:
			return true
		case <-ctx.Done():
			return false
		}
	}
	synced := func(context.Context) bool { return true }
	firstDone, secondDone := make(chan struct{}), make(chan struct{})
	go func() { defer close(firstDone); first.run(ctx, synced) }()
	go func() { defer close(secondDone); second.run(ctx, syncing) }()
	deadline := time.Now().Add(10 * time.Second)
	for !firstSynced(tracker) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := probe(t, tracker); got != http.StatusServiceUnavailable {
		t.Fatalf("one of two provisioners synced: %d, want 503", got)
	}
	close(release)
	for !tracker.Synced() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := probe(t, tracker); got != http.StatusOK {
		t.Fatalf("both provisioners synced: %d, want 200", got)
	}
	cancel()
	<-firstDone
	<-secondDone
}

// firstSynced reports whether exactly one of the tracker's plugins is still syncing.
func firstSynced(s *SyncTracker) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.syncing == 1
}
