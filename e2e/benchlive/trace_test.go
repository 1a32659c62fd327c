package benchlive

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// schedulerTrace summarises joinery-scheduler's JSON log from begin on: each batch (when, how
// many pods, how many replicas not created yet it planned too, how many new NodeClaims) and the client-side throttling waits, which is where
// the gap was looked for.
func schedulerTrace(logPath string, begin time.Time) (string, error) {
	f, err := os.Open(logPath)
	if err != nil {
		return "", fmt.Errorf("open scheduler log: %w", err)
	}
	defer f.Close()
	var batches []string
	throttled, longest := 0, time.Duration(0)
	missing := 0 // replicas not created yet, planned with the next batch
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for scanner.Scan() {
		line := scanner.Bytes()
		var entry struct {
			TS         float64 `json:"ts"`
			Msg        string  `json:"msg"`
			Pods       any     `json:"Pods"`
			NodeClaims int     `json:"nodeclaims"`
			Delay      string  `json:"delay"`
			Planned    int     `json:"planned"`
		}
		if json.Unmarshal(line, &entry) != nil {
			continue
		}
		at := time.UnixMilli(int64(entry.TS))
		if at.Before(begin) {
			continue
		}
		offset := at.Sub(begin).Seconds()
		switch entry.Msg {
		case "found provisionable pod(s)":
			n := 0
			if s, ok := entry.Pods.(string); ok && s != "" {
				n = strings.Count(s, ",") + 1
			}
			batch := fmt.Sprintf("+%.1fs %d pods", offset, n)
			if missing > 0 {
				batch += fmt.Sprintf(" (+%d not created yet)", missing)
				missing = 0
			}
			batches = append(batches, batch)
		case "planning replicas not created yet":
			missing = entry.Planned
		case "computed new nodeclaim(s) to fit pod(s)":
			if len(batches) > 0 {
				batches[len(batches)-1] += fmt.Sprintf(" → %d new", entry.NodeClaims)
			}
		case "Waited before sending request":
			throttled++
			if d, err := time.ParseDuration(entry.Delay); err == nil && d > longest {
				longest = d
			}
		}
	}
	if err := scanner.Err(); err != nil {
		return "", fmt.Errorf("read scheduler log: %w", err)
	}
	return fmt.Sprintf("batches: %s; client-side throttling waits: %d (longest %s)", strings.Join(batches, ", "), throttled, longest.Round(10*time.Millisecond)), nil
}
