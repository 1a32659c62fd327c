package plugin

import (
	"net/http"
	"sync"
)

// SyncTracker (Options.Readiness) learns of every provisioning plugin the scheduler builds and
// reports ready once each has synced its caches. kube-scheduler's own /readyz cannot take a
// plugin's check, and the plugin syncs in the background so that the health server is up
// before a large cluster's sync ends (a liveness probe would otherwise restart it in a loop);
// this is what says when provisioning can start. A nil tracker (tests) tracks nothing.
type SyncTracker struct {
	mu      sync.Mutex
	plugins int // plugins registered
	syncing int // of which not synced yet
}

// NewSyncTracker returns a tracker that is not ready until a plugin has registered and synced.
func NewSyncTracker() *SyncTracker { return &SyncTracker{} }

// register records a plugin that syncs; the returned func marks it synced (once).
func (s *SyncTracker) register() func() {
	if s == nil {
		return func() {}
	}
	s.mu.Lock()
	s.plugins++
	s.syncing++
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.syncing--
			s.mu.Unlock()
		})
	}
}

// Synced reports whether at least one plugin registered and every registered plugin synced.
func (s *SyncTracker) Synced() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.plugins > 0 && s.syncing == 0
}

// ServeHTTP answers a readiness probe: 200 once synced, 503 before.
func (s *SyncTracker) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if !s.Synced() {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("provisioner caches not synced\n"))
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}
