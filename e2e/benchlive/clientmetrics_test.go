package benchlive

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/joinery-dev/joinery/e2e/framework"
)

// schedulerClientUse reads joinery-scheduler's client-go metrics: its API requests by method
// and the time its requests waited for a client-side rate limiter, in total. Every client of
// the process counts (kube-scheduler's, its event client's and the plugin's).
func schedulerClientUse(ctx context.Context, env *framework.Env) (string, error) {
	body, err := schedulerGet(ctx, env, "/metrics")
	if err != nil {
		return "", fmt.Errorf("scheduler metrics: %w", err)
	}
	defer body.Close()
	return clientUse(body)
}

// schedulerGet reads path from joinery-scheduler's secure port (kube-scheduler's, which
// authenticates and authorizes the caller: the admin kubeconfig's identity may read it).
func schedulerGet(ctx context.Context, env *framework.Env, path string) (io.ReadCloser, error) {
	cfg := rest.CopyConfig(env.RESTConfig)
	cfg.TLSClientConfig.Insecure, cfg.TLSClientConfig.CAData, cfg.TLSClientConfig.CAFile = true, nil, ""
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	url := strings.TrimSuffix(env.Cluster.SchedulerMetricsURL(), "/metrics") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Transport: transport}).Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return resp.Body, nil
}

// profileSeconds is how long a scale-up's CPU profile runs: past every workload's all Running.
const profileSeconds = 60

// profileScheduler starts a CPU profile of joinery-scheduler (kube-scheduler's
// /debug/pprof/profile on its secure port) and returns a func that waits for it and writes
// it to path. A failure is logged, not fatal: the profile is a diagnosis, not a result.
func profileScheduler(t *testing.T, env *framework.Env, path string) (wait func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := fetchProfile(t.Context(), env, path); err != nil {
			t.Logf("CPU profile of joinery-scheduler: %v", err)
		}
	}()
	return func() { <-done }
}

func fetchProfile(ctx context.Context, env *framework.Env, path string) error {
	body, err := schedulerGet(ctx, env, fmt.Sprintf("/debug/pprof/profile?seconds=%d", profileSeconds))
	if err != nil {
		return err
	}
	defer body.Close()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// clientUse summarises rest_client_requests_total by method, the sum of
// rest_client_rate_limiter_duration_seconds, and kube-scheduler's queue churn (scheduling
// attempts, moves to the active queue by the plugin's Activate, and every move to a queue by
// the event that caused it) from Prometheus text.
func clientUse(r io.Reader) (string, error) {
	byMethod, byEvent := map[string]float64{}, map[string]float64{}
	var waited, waits, attempts, activated float64
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for scanner.Scan() {
		line := scanner.Text()
		series, value, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.ParseFloat(strings.Fields(value)[0], 64)
		if err != nil {
			continue
		}
		name, labels, _ := strings.Cut(series, "{")
		switch name {
		case "rest_client_requests_total":
			if _, rest, ok := strings.Cut(labels, `method="`); ok {
				method, _, _ := strings.Cut(rest, `"`)
				byMethod[method] += v
			}
		case "rest_client_rate_limiter_duration_seconds_sum":
			waited += v
		case "rest_client_rate_limiter_duration_seconds_count":
			waits += v
		case "scheduler_schedule_attempts_total":
			attempts += v
		case "scheduler_queue_incoming_pods_total":
			if strings.Contains(labels, `event="ForceActivate"`) {
				activated += v
			}
			if _, rest, ok := strings.Cut(labels, `event="`); ok {
				event, _, _ := strings.Cut(rest, `"`)
				byEvent[event] += v
			}
		}
	}
	if err := scanner.Err(); err != nil {
		return "", fmt.Errorf("scheduler metrics: %w", err)
	}
	var parts []string
	for _, m := range slices.Sorted(maps.Keys(byMethod)) {
		parts = append(parts, fmt.Sprintf("%s %.0f", m, byMethod[m]))
	}
	// What moved pods to the queues, most first: which requeues the attempts follow.
	events := slices.SortedFunc(maps.Keys(byEvent), func(a, b string) int {
		if byEvent[a] != byEvent[b] {
			return int(byEvent[b] - byEvent[a])
		}
		return strings.Compare(a, b)
	})
	moves := make([]string, 0, len(events))
	for _, e := range events {
		moves = append(moves, fmt.Sprintf("%s %.0f", e, byEvent[e]))
	}
	return fmt.Sprintf("joinery-scheduler API requests %s; client-side rate-limiter wait %.1f s over %.0f requests; scheduling attempts %.0f, activated by the plugin %.0f; queue moves by event: %s",
		strings.Join(parts, ", "), waited, waits, attempts, activated, strings.Join(moves, ", ")), nil
}
