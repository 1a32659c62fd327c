package framework

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// ControllerMetric sums the samples of the joinery-controller metric name (a counter, a gauge
// or a histogram's _count or _sum series) whose labels include every label="value" pair in
// labels. It reads the local cluster's metrics endpoint, so it needs a local cluster.
func (e *Env) ControllerMetric(ctx context.Context, name string, labels ...string) (float64, error) {
	if !e.Local() {
		return 0, fmt.Errorf("controller metric %s: not a local cluster", name)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.Cluster.ControllerMetricsURL(), nil)
	if err != nil {
		return 0, fmt.Errorf("controller metric %s: %w", name, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("controller metric %s: %w", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("controller metric %s: %s", name, resp.Status)
	}
	var sum float64
	scanner := bufio.NewScanner(resp.Body)
	scanner.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for scanner.Scan() {
		line := scanner.Text()
		series, value, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		metric, labelText, _ := strings.Cut(series, "{")
		if metric != name || !hasLabels(labelText, labels) {
			continue
		}
		v, err := strconv.ParseFloat(strings.Fields(value)[0], 64)
		if err != nil {
			return 0, fmt.Errorf("controller metric %s: sample %q: %w", name, line, err)
		}
		sum += v
	}
	if err := scanner.Err(); err != nil {
		return 0, fmt.Errorf("controller metric %s: reading: %w", name, err)
	}
	return sum, nil
}

// hasLabels reports whether the label text of a sample (`a="x",b="y"}`) holds every
// `key="value"` of want.
func hasLabels(labelText string, want []string) bool {
	for _, w := range want {
		if !strings.Contains(","+labelText, ","+w+",") && !strings.Contains(","+labelText, ","+w+"}") {
			return false
		}
	}
	return true
}
