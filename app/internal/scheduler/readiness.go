package scheduler

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/klog/v2"

	"github.com/joinery-dev/joinery/plugin"
)

// readinessServer serves /readyz from the plugin's SyncTracker (plugin.Options.Readiness):
// kube-scheduler's own /readyz cannot take a plugin's check, and the Provisioner syncs its
// caches in the background.
type readinessServer struct {
	address string
}

func (r *readinessServer) bind(fs *flag.FlagSet) {
	// The default is HEALTH_PROBE_PORT's, when set (see main).
	fs.StringVar(&r.address, "readiness-bind-address", r.address,
		"host:port to serve /readyz on over plain HTTP: 200 once every profile's Provisioner has synced its caches, 503 before; empty serves nothing (default :HEALTH_PROBE_PORT when that is set)")
}

// serve listens on the address, when one is set, and serves until ctx ends.
func (r *readinessServer) serve(ctx context.Context, tracker *plugin.SyncTracker) error {
	if r.address == "" {
		return nil
	}
	listener, err := net.Listen("tcp", r.address)
	if err != nil {
		return fmt.Errorf("listening for readiness probes on %s: %w", r.address, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/readyz", tracker)
	server := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := server.Serve(listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.Background().Error(err, "readiness server stopped", "address", r.address)
		}
	}()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdown)
	}()
	return nil
}
