package controller

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	uberzap "go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// TestLogger: LOG_LEVEL's levels filter as Karpenter's do, and each line is JSON with
// Karpenter's keys.
func TestLogger(t *testing.T) {
	tests := []struct {
		level                      string
		wantDebug, wantInfo, wantE bool
	}{
		{"debug", true, true, true},
		{"info", false, true, true},
		{"error", false, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.level, func(t *testing.T) {
			var buf bytes.Buffer
			logger, err := newLogger(tt.level, &zap.Options{DestWriter: &buf}, false)
			if err != nil {
				t.Fatal(err)
			}
			logger = logger.WithName("controller")
			logger.V(1).Info("debug line")
			logger.Info("info line", "NodeClaim", map[string]string{"name": "a"}, "provider-id", "kwok://a")
			logger.Error(nil, "error line")
			out := buf.String()
			for msg, want := range map[string]bool{"debug line": tt.wantDebug, "info line": tt.wantInfo, "error line": tt.wantE} {
				if strings.Contains(out, msg) != want {
					t.Errorf("%q logged: %v, want %v\n%s", msg, !want, want, out)
				}
			}
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				var entry map[string]any
				if err := json.Unmarshal([]byte(line), &entry); err != nil {
					t.Fatalf("not JSON: %q: %v", line, err)
				}
				for _, key := range []string{"level", "time", "logger", "message"} {
					if _, ok := entry[key]; !ok {
						t.Errorf("line %q has no %q", line, key)
					}
				}
				if l := entry["level"].(string); l != strings.ToUpper(l) {
					t.Errorf("level %q is not in capitals", l)
				}
			}
		})
	}
	if _, err := newLogger("trace", &zap.Options{}, false); err == nil {
		t.Error("log level trace accepted")
	}
}

// TestConflictsAreNotErrors (issue 26): an optimistic-lock conflict reported as an error —
// controller-runtime's "Reconciler error" for a reconcile that will be retried — is logged at
// debug level, not as ERROR, and counted by the controller (else the logger) that met it. Any
// other error, including one joined to a conflict, is still an ERROR.
func TestConflictsAreNotErrors(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "karpenter.sh", Resource: "nodeclaims"}, "default-abc12", errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	tests := []struct {
		name       string
		level      string
		logger     func(logr.Logger) logr.Logger
		err        error
		wantError  bool   // an ERROR line
		wantDebug  bool   // a DEBUG line
		wantSource string // the counter that goes up; "" for none
	}{
		{"a reconciler's conflict", "info", func(l logr.Logger) logr.Logger {
			return l.WithName("nodeclaim.lifecycle").WithValues("controller", "nodeclaim.lifecycle", "controllerKind", "NodeClaim")
		}, conflict, false, false, "nodeclaim.lifecycle"},
		{"shown at LOG_LEVEL=debug", "debug", func(l logr.Logger) logr.Logger {
			return l.WithValues("controller", "nodepool.readiness")
		}, conflict, false, true, "nodepool.readiness"},
		{"wrapped, outside a controller", "info", func(l logr.Logger) logr.Logger { return l.WithName("disruption").WithName("queue") },
			fmt.Errorf("tainting node a: %w", conflict), false, false, "disruption.queue"},
		{"two conflicts joined", "info", func(l logr.Logger) logr.Logger { return l.WithName("cost") },
			errors.Join(conflict, fmt.Errorf("again: %w", conflict)), false, false, "cost"},
		{"a real error stays an error", "info", func(l logr.Logger) logr.Logger { return l.WithValues("controller", "x") },
			apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "a", errors.New("no")), true, false, ""},
		{"a real error joined to a conflict stays an error", "info", func(l logr.Logger) logr.Logger { return l.WithValues("controller", "y") },
			fmt.Errorf("patch: %w, %w", conflict, errors.New("connection refused")), true, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			logger, err := newLogger(tt.level, &zap.Options{DestWriter: &buf}, false)
			if err != nil {
				t.Fatal(err)
			}
			var before float64
			if tt.wantSource != "" {
				before = testutil.ToFloat64(optimisticLockConflicts.WithLabelValues(tt.wantSource))
			}
			tt.logger(logger).Error(tt.err, "Reconciler error")
			out := buf.String()
			if got := strings.Contains(out, `"level":"ERROR"`); got != tt.wantError {
				t.Errorf("ERROR line: %v, want %v\n%s", got, tt.wantError, out)
			}
			if got := strings.Contains(out, `"level":"DEBUG"`); got != tt.wantDebug {
				t.Errorf("DEBUG line: %v, want %v\n%s", got, tt.wantDebug, out)
			}
			if tt.wantDebug && !strings.Contains(out, "the object has been modified") {
				t.Errorf("the debug line does not carry the error:\n%s", out)
			}
			if tt.wantSource != "" {
				if got := testutil.ToFloat64(optimisticLockConflicts.WithLabelValues(tt.wantSource)) - before; got != 1 {
					t.Errorf("joinery_optimistic_lock_conflicts_total{source=%q} went up by %v, want 1", tt.wantSource, got)
				}
			}
		})
	}
}

// TestConflictSinkReportsTheCaller: the wrapper's own frame is skipped, so a line's caller
// (when the logger reports callers) is the code that logged.
func TestConflictSinkReportsTheCaller(t *testing.T) {
	var buf bytes.Buffer
	logger, err := newLogger("debug", &zap.Options{DestWriter: &buf, ZapOpts: []uberzap.Option{uberzap.AddCaller()}}, false)
	if err != nil {
		t.Fatal(err)
	}
	logger.WithName("x").Info("an info line")
	logger.WithValues("controller", "y").Error(errors.New("boom"), "a real error")
	logger.WithValues("controller", "z").Error(apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "a", errors.New("modified")), "a conflict")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	for _, msg := range []string{"an info line", "a real error", "a conflict"} {
		i := slices.IndexFunc(lines, func(line string) bool { return strings.Contains(line, msg) })
		if i < 0 {
			t.Fatalf("no line %q:\n%s", msg, buf.String())
		}
		if !strings.Contains(lines[i], "controller/logging_test.go:") {
			t.Errorf("line %q does not name this test as its caller", lines[i])
		}
	}
}
