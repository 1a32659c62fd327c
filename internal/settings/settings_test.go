package settings

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/joinery-dev/joinery/simulation/solver"
)

func lookup(env map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	}
}

func TestFromEnv(t *testing.T) {
	second, tenSeconds := time.Second, 10*time.Second
	respect, bestEffort := solver.PreferenceRespect, solver.MinValuesBestEffort
	debugLevel, port, qps, burst := "debug", 9090, float32(50), 100
	cpu, mem, yes, name := int64(1500), int64(1<<30), true, "lease"
	minute, hour := time.Minute, time.Hour
	tests := []struct {
		name    string
		env     map[string]string
		want    Settings
		wantErr []string // each must appear in the error
	}{
		{name: "nothing set", env: map[string]string{}},
		{name: "empty is unset", env: map[string]string{"LOG_LEVEL": " ", "METRICS_PORT": ""}},
		{
			name: "every setting",
			env: map[string]string{
				"BATCH_IDLE_DURATION": "1s", "BATCH_MAX_DURATION": "10s", "PREFERENCE_POLICY": "Respect", "MIN_VALUES_POLICY": "BestEffort",
				"LOG_LEVEL": "debug", "METRICS_PORT": "9090", "HEALTH_PROBE_PORT": "9090", "KUBE_CLIENT_QPS": "50", "KUBE_CLIENT_BURST": "100",
				"CPU_REQUESTS": "1500", "MEMORY_LIMIT": "1073741824", "DISABLE_LEADER_ELECTION": "true", "LEADER_ELECTION_NAME": "lease",
				"LEADER_ELECTION_NAMESPACE": "lease", "IGNORE_DRA_REQUESTS": "true",
				"LOG_OUTPUT_PATHS": "stdout, /var/log/joinery.log", "LOG_ERROR_OUTPUT_PATHS": "stderr", "ENABLE_PROFILING": "true",
				"AMI_REFRESH_INTERVAL": "1m", "SUBNET_REFRESH_INTERVAL": "1h", "DISABLE_DRY_RUN": "true",
			},
			want: Settings{
				BatchIdleDuration: &second, BatchMaxDuration: &tenSeconds, PreferencePolicy: &respect, MinValuesPolicy: &bestEffort,
				LogLevel: &debugLevel, MetricsPort: &port, HealthProbePort: &port, KubeClientQPS: &qps, KubeClientBurst: &burst,
				CPURequests: &cpu, MemoryLimit: &mem, DisableLeaderElection: &yes, LeaderElectionName: &name, LeaderElectionNamespace: &name,
				IgnoreDRARequests: &yes, LogOutputPaths: []string{"stdout", "/var/log/joinery.log"}, LogErrorOutputPaths: []string{"stderr"},
				EnableProfiling: &yes, AMIRefreshInterval: &minute, SubnetRefreshInterval: &hour, DisableDryRun: &yes,
			},
		},
		{
			name: "each invalid value is named",
			env: map[string]string{
				"BATCH_IDLE_DURATION": "soon", "BATCH_MAX_DURATION": "-1s", "PREFERENCE_POLICY": "respect", "MIN_VALUES_POLICY": "Loose",
				"LOG_LEVEL": "trace", "METRICS_PORT": "70000", "KUBE_CLIENT_QPS": "0", "KUBE_CLIENT_BURST": "many",
				"CPU_REQUESTS": "0", "DISABLE_LEADER_ELECTION": "maybe", "IGNORE_DRA_REQUESTS": "sometimes",
				"LOG_OUTPUT_PATHS": "stdout,,stderr", "LOG_ERROR_OUTPUT_PATHS": "syslog://localhost", "ENABLE_PROFILING": "on",
				"AMI_REFRESH_INTERVAL": "30s", "SUBNET_REFRESH_INTERVAL": "hourly", "DISABLE_DRY_RUN": "yes please",
			},
			wantErr: []string{`BATCH_IDLE_DURATION="soon"`, `BATCH_MAX_DURATION="-1s": must be positive`, `PREFERENCE_POLICY="respect": must be one of Respect, Ignore`,
				`MIN_VALUES_POLICY="Loose"`, `LOG_LEVEL="trace": must be one of debug, info, error`, `METRICS_PORT="70000"`, `KUBE_CLIENT_QPS="0"`,
				`KUBE_CLIENT_BURST="many"`, `CPU_REQUESTS="0"`, `DISABLE_LEADER_ELECTION="maybe"`, `IGNORE_DRA_REQUESTS="sometimes"`,
				`LOG_OUTPUT_PATHS="stdout,,stderr": empty path`, `LOG_ERROR_OUTPUT_PATHS="syslog://localhost": "syslog://localhost": only stdout, stderr`,
				`ENABLE_PROFILING="on": must be true or false`, `AMI_REFRESH_INTERVAL="30s": must be at least 1m0s`,
				`SUBNET_REFRESH_INTERVAL="hourly": not a duration`, `DISABLE_DRY_RUN="yes please"`},
		},
		{
			name:    "idle longer than max",
			env:     map[string]string{"BATCH_IDLE_DURATION": "20s", "BATCH_MAX_DURATION": "10s"},
			wantErr: []string{"BATCH_IDLE_DURATION=20s must not be longer than BATCH_MAX_DURATION=10s"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FromEnv(lookup(tt.env))
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error, want one naming %v", tt.wantErr)
				}
				for _, want := range tt.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not contain %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("settings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseLogPaths(t *testing.T) {
	tests := []struct {
		value   string
		want    []string
		wantErr string
	}{
		{value: "stdout", want: []string{"stdout"}},
		{value: " stderr , /tmp/a.log,relative.log", want: []string{"stderr", "/tmp/a.log", "relative.log"}},
		{value: "file:///tmp/a.log", want: []string{"file:///tmp/a.log"}},
		{value: "/tmp/100%.log", want: []string{"/tmp/100%.log"}}, // absolute: not parsed as a URL, as zap opens it
		{value: "stdout,", wantErr: "empty path"},
		{value: "http://logs.example.com", wantErr: "only stdout, stderr, file paths"},
		{value: "100%.log", wantErr: "only stdout, stderr, file paths"},
		{value: "/tmp/a\x00b", wantErr: "NUL"},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			got, err := ParseLogPaths(tt.value)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("paths (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOpenLogSinks: lines go to every output path, a file is appended to, and a sink that
// cannot be opened is an error naming its setting.
func TestOpenLogSinks(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	if err := os.WriteFile(a, []byte("kept\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sinks, err := OpenLogSinks([]string{a, b}, []string{filepath.Join(dir, "errors.log")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sinks.Out.Write([]byte("line\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := sinks.ErrOut.Write([]byte("logger error\n")); err != nil {
		t.Fatal(err)
	}
	sinks.Close()
	for path, want := range map[string]string{a: "kept\nline\n", b: "line\n", filepath.Join(dir, "errors.log"): "logger error\n"} {
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Errorf("%s = %q (%v), want %q", path, got, err, want)
		}
	}

	missing := filepath.Join(dir, "no-such-dir", "x.log")
	if _, err := OpenLogSinks([]string{missing}, nil); err == nil || !strings.Contains(err.Error(), "LOG_OUTPUT_PATHS") {
		t.Errorf("opening %s: error %v, want one naming LOG_OUTPUT_PATHS", missing, err)
	}
	if _, err := OpenLogSinks(nil, []string{missing}); err == nil || !strings.Contains(err.Error(), "LOG_ERROR_OUTPUT_PATHS") {
		t.Errorf("opening %s: error %v, want one naming LOG_ERROR_OUTPUT_PATHS", missing, err)
	}
}

// TestProfilingHandlers: the index lists the profiles and a named profile is served.
func TestProfilingHandlers(t *testing.T) {
	mux := http.NewServeMux()
	for path, h := range ProfilingHandlers() {
		mux.Handle(path, h)
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for path, want := range map[string]string{"/debug/pprof/": "goroutine", "/debug/pprof/goroutine?debug=1": "goroutine profile"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %d, body without %q", path, resp.StatusCode, want)
		}
	}
}

func TestNamesAreRead(t *testing.T) {
	for _, name := range Names {
		if _, err := FromEnv(lookup(map[string]string{name: "\x00invalid"})); err == nil && !strings.HasPrefix(name, "LEADER_ELECTION_") {
			t.Errorf("%s: an invalid value was accepted; is it read?", name)
		}
	}
}
