package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

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
