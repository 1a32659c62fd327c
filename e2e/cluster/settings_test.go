package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/joinery-dev/joinery/e2e/framework"
	"github.com/joinery-dev/joinery/internal/localcluster"
)

// standbyController runs a second joinery-controller with extraEnv added to its environment: a
// standby, since the cluster's controller holds the lease, which still logs and serves its
// metrics endpoint (plain HTTP on loopback). It returns the metrics URL and the file its
// stdout and stderr go to.
func standbyController(t *testing.T, name string, extraEnv ...string) (metricsURL, outputPath string) {
	t.Helper()
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	metricsPort, probePort := freeLoopbackPort(t), freeLoopbackPort(t)
	outputPath = filepath.Join(env.Cluster.LogsDir(), name+"-controller.log")
	output, err := os.Create(outputPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(root, "bin", "joinery-controller"),
		"--kubeconfig="+env.Cluster.KubeconfigOf(localcluster.JoineryController),
		"--metrics-bind-address=127.0.0.1:"+strconv.Itoa(metricsPort),
		"--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(probePort),
		"--leader-elect=true",
		"--leader-election-namespace="+env.Cluster.ControllerNamespace(),
		"--cloud-provider=kwok",
	)
	cmd.Env = append(os.Environ(), extraEnv...)
	cmd.Stdout, cmd.Stderr = output, output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		output.Close()
	})
	return fmt.Sprintf("http://127.0.0.1:%d", metricsPort), outputPath
}

// get fetches url and returns its status and body.
func get(ctx context.Context, url string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// TestControllerProfiling: ENABLE_PROFILING=true serves Go's pprof under /debug/pprof/ on the
// metrics endpoint; without it the path is not found while /metrics is served.
func TestControllerProfiling(t *testing.T) {
	env.RequireLocal(t)
	tests := []struct {
		name     string
		env      []string
		wantCode int
		wantBody string
	}{
		{name: "enabled", env: []string{"ENABLE_PROFILING=true"}, wantCode: http.StatusOK, wantBody: "profile"},
		{name: "unset", wantCode: http.StatusNotFound},
		{name: "disabled", env: []string{"ENABLE_PROFILING=false"}, wantCode: http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			metrics, _ := standbyController(t, "TestControllerProfiling-"+tt.name, tt.env...)
			framework.Eventually(t, 90*time.Second, "joinery-controller serving /metrics", func(ctx context.Context) (bool, error) {
				code, body, err := get(ctx, metrics+"/metrics")
				if err != nil {
					return false, err
				}
				return code == http.StatusOK, fmt.Errorf("status %d: %.200s", code, body)
			})
			for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap?debug=1"} {
				code, body, err := get(t.Context(), metrics+path)
				if err != nil {
					t.Fatal(err)
				}
				if code != tt.wantCode || !strings.Contains(body, tt.wantBody) {
					t.Errorf("GET %s: status %d, want %d with %q: %.300s", path, code, tt.wantCode, tt.wantBody, body)
				}
			}
		})
	}
}

// TestControllerLogOutputPaths: with LOG_OUTPUT_PATHS naming two files, every log line is a
// JSON line with Karpenter's keys in both, and none reaches stdout or stderr.
func TestControllerLogOutputPaths(t *testing.T) {
	env.RequireLocal(t)
	dir := t.TempDir()
	first, second := filepath.Join(dir, "first.log"), filepath.Join(dir, "second.log")
	metrics, output := standbyController(t, "TestControllerLogOutputPaths",
		"LOG_OUTPUT_PATHS="+first+","+second, "LOG_ERROR_OUTPUT_PATHS="+filepath.Join(dir, "errors.log"))

	// The standby logs its start and its wait for the lease; the metrics endpoint says it runs.
	framework.Eventually(t, 90*time.Second, "joinery-controller logging to LOG_OUTPUT_PATHS", func(ctx context.Context) (bool, error) {
		code, _, err := get(ctx, metrics+"/metrics")
		if err != nil || code != http.StatusOK {
			return false, fmt.Errorf("metrics: %d %v", code, err)
		}
		for _, path := range []string{first, second} {
			lines, err := jsonLogLines(path)
			if err != nil {
				return false, err
			}
			if !hasMessage(lines, "starting") {
				return false, fmt.Errorf("%s has %d lines, none with message \"starting\"", path, len(lines))
			}
		}
		return true, nil
	})
	// Nothing went to the process's own stdout and stderr.
	out, err := os.ReadFile(output)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte(`"message"`)) {
		t.Errorf("log lines reached stdout/stderr despite LOG_OUTPUT_PATHS:\n%.1000s", out)
	}
}

// jsonLogLines parses each line of path as a JSON log line with Karpenter's keys.
func jsonLogLines(path string) ([]map[string]any, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []map[string]any
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for scanner.Scan() {
		var line map[string]any
		if err := json.Unmarshal(scanner.Bytes(), &line); err != nil {
			return nil, fmt.Errorf("%s: not a JSON line: %q", path, scanner.Text())
		}
		for _, key := range []string{"level", "time", "message"} {
			if _, ok := line[key]; !ok {
				return nil, fmt.Errorf("%s: line without %q: %q", path, key, scanner.Text())
			}
		}
		lines = append(lines, line)
	}
	return lines, scanner.Err()
}

func hasMessage(lines []map[string]any, message string) bool {
	for _, l := range lines {
		if l["message"] == message {
			return true
		}
	}
	return false
}

// TestInvalidSettingsStopTheBinaries: both binaries refuse an invalid value of each of these
// settings at start, naming it, before doing anything else.
func TestInvalidSettingsStopTheBinaries(t *testing.T) {
	env.RequireLocal(t)
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	invalid := map[string]string{
		"LOG_OUTPUT_PATHS": "stdout,,", "LOG_ERROR_OUTPUT_PATHS": "syslog://localhost", "ENABLE_PROFILING": "sometimes",
		"AMI_REFRESH_INTERVAL": "30s", "SUBNET_REFRESH_INTERVAL": "hourly", "DISABLE_DRY_RUN": "maybe",
	}
	for _, binary := range []string{"joinery-controller", "joinery-scheduler"} {
		t.Run(binary, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, filepath.Join(root, "bin", binary), "--version")
			cmd.Env = os.Environ()
			for name, value := range invalid {
				cmd.Env = append(cmd.Env, name+"="+value)
			}
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("%s exited with %v, want status 2:\n%s", binary, err, out)
			}
			for name, value := range invalid {
				if want := fmt.Sprintf("%s=%q", name, value); !strings.Contains(string(out), want) {
					t.Errorf("the error does not name %s:\n%s", want, out)
				}
			}
		})
	}
}
