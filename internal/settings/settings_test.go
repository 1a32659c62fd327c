package settings

import (
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
			},
			want: Settings{
				BatchIdleDuration: &second, BatchMaxDuration: &tenSeconds, PreferencePolicy: &respect, MinValuesPolicy: &bestEffort,
				LogLevel: &debugLevel, MetricsPort: &port, HealthProbePort: &port, KubeClientQPS: &qps, KubeClientBurst: &burst,
				CPURequests: &cpu, MemoryLimit: &mem, DisableLeaderElection: &yes, LeaderElectionName: &name, LeaderElectionNamespace: &name,
				IgnoreDRARequests: &yes,
			},
		},
		{
			name: "each invalid value is named",
			env: map[string]string{
				"BATCH_IDLE_DURATION": "soon", "BATCH_MAX_DURATION": "-1s", "PREFERENCE_POLICY": "respect", "MIN_VALUES_POLICY": "Loose",
				"LOG_LEVEL": "trace", "METRICS_PORT": "70000", "KUBE_CLIENT_QPS": "0", "KUBE_CLIENT_BURST": "many",
				"CPU_REQUESTS": "0", "DISABLE_LEADER_ELECTION": "maybe", "IGNORE_DRA_REQUESTS": "sometimes",
			},
			wantErr: []string{`BATCH_IDLE_DURATION="soon"`, `BATCH_MAX_DURATION="-1s": must be positive`, `PREFERENCE_POLICY="respect": must be one of Respect, Ignore`,
				`MIN_VALUES_POLICY="Loose"`, `LOG_LEVEL="trace": must be one of debug, info, error`, `METRICS_PORT="70000"`, `KUBE_CLIENT_QPS="0"`,
				`KUBE_CLIENT_BURST="many"`, `CPU_REQUESTS="0"`, `DISABLE_LEADER_ELECTION="maybe"`, `IGNORE_DRA_REQUESTS="sometimes"`},
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

func TestNamesAreRead(t *testing.T) {
	for _, name := range Names {
		if _, err := FromEnv(lookup(map[string]string{name: "\x00invalid"})); err == nil && !strings.HasPrefix(name, "LEADER_ELECTION_") {
			t.Errorf("%s: an invalid value was accepted; is it read?", name)
		}
	}
}
