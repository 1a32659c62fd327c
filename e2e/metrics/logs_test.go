package metrics

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joinery-dev/joinery/e2e/framework"
)

// TestControllerLogsCarryKarpentersKeys: joinery-controller's log of a NodeClaim's launch is a
// JSON line with Karpenter's keys, so log queries written for Karpenter find it.
func TestControllerLogsCarryKarpentersKeys(t *testing.T) {
	env.RequireLocal(t)
	group := framework.UniqueName("logs")
	createNodePool(t, group)
	ns := env.Namespace(t)
	createDeployment(t, ns, group, 1)
	env.AwaitPods(t, ns, framework.GroupLabel+"="+group, 1, timeout, running)

	path := filepath.Join(env.Cluster.LogsDir(), "joinery-controller.log")
	want := []string{"level", "time", "message", "NodeClaim", "NodePool", "provider-id", "instance-type", "zone", "capacity-type", "allocatable"}
	var entry map[string]any
	framework.Eventually(t, 2*time.Minute, "the launch of a NodeClaim of "+group+" in "+path, func(context.Context) (bool, error) {
		entry = findLogEntry(t, path, "launched nodeclaim", group)
		return entry != nil, nil
	})
	for _, key := range want {
		if _, ok := entry[key]; !ok {
			t.Errorf("the launch's log entry has no %q: %v", key, entry)
		}
	}
	if level, _ := entry["level"].(string); level != "INFO" {
		t.Errorf("level = %q, want INFO", level)
	}
	if _, err := time.Parse(time.RFC3339Nano, entry["time"].(string)); err != nil {
		t.Errorf("time: %v", err)
	}
}

// findLogEntry returns the first JSON log entry whose message is message and whose NodePool is
// pool, or nil.
func findLogEntry(t *testing.T, path, message, pool string) map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for scanner.Scan() {
		line := scanner.Text()
		if !strings.Contains(line, message) || !strings.Contains(line, pool) {
			continue
		}
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatalf("a log line of %s is not JSON: %q: %v", path, line, err)
		}
		if entry["message"] == message {
			if np, ok := entry["NodePool"].(map[string]any); ok && np["name"] == pool {
				return entry
			}
		}
	}
	return nil
}
