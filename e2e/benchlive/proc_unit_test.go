package benchlive

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joinery-dev/joinery/internal/localcluster"
)

// TestReadUsage reads this process's own figures: the parser must find both.
func TestReadUsage(t *testing.T) {
	u, err := readUsage(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if u.peakRSSMiB <= 0 || u.cpuSeconds < 0 {
		t.Fatalf("usage %+v", u)
	}
}

// TestSchedulerTrace reads batches (with the replicas not created yet they planned) and
// throttling waits from joinery-scheduler's JSON log, ignoring what was logged before the
// workload was applied.
func TestSchedulerTrace(t *testing.T) {
	begin := time.UnixMilli(1_000_000)
	log := strings.Join([]string{
		`{"ts":999000,"msg":"found provisionable pod(s)","Pods":"ns/old"}`,
		`{"ts":1009990,"msg":"planning replicas not created yet","missing":40,"planned":40}`,
		`{"ts":1010000,"msg":"found provisionable pod(s)","Pods":"ns/a, ns/b, ns/c"}`,
		`{"ts":1010050,"msg":"computed new nodeclaim(s) to fit pod(s)","nodeclaims":2,"pods":3}`,
		`{"ts":1012000,"msg":"Waited before sending request","delay":"1.5s"}`,
		`not json`,
		`{"ts":1013000,"msg":"Waited before sending request","delay":"250ms"}`,
	}, "\n")
	path := filepath.Join(t.TempDir(), "joinery-scheduler.log")
	if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := schedulerTrace(path, begin)
	if err != nil {
		t.Fatal(err)
	}
	want := "batches: +10.0s 3 pods (+40 not created yet) → 2 new; client-side throttling waits: 2 (longest 1.5s)"
	if got != want {
		t.Errorf("trace %q, want %q", got, want)
	}
}

func TestClientUse(t *testing.T) {
	text := `# HELP rest_client_requests_total x
rest_client_requests_total{code="201",host="h",method="POST"} 3
rest_client_requests_total{code="200",host="h",method="PATCH"} 5
rest_client_requests_total{code="409",host="h",method="POST"} 1
rest_client_rate_limiter_duration_seconds_sum{host="h",verb="POST"} 1.25
rest_client_rate_limiter_duration_seconds_sum{host="h",verb="PATCH"} 0.25
rest_client_rate_limiter_duration_seconds_count{host="h",verb="PATCH"} 9
scheduler_schedule_attempts_total{profile="joinery",result="unschedulable"} 7
scheduler_schedule_attempts_total{profile="joinery",result="scheduled"} 5
scheduler_queue_incoming_pods_total{event="ForceActivate",queue="active"} 4
scheduler_queue_incoming_pods_total{event="PodAdd",queue="active"} 12
`
	got, err := clientUse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	want := "joinery-scheduler API requests PATCH 5, POST 4; client-side rate-limiter wait 1.5 s over 9 requests; scheduling attempts 12, activated by the plugin 4; queue moves by event: PodAdd 12, ForceActivate 4"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestMedianOf takes each column's own median: the middle run for an odd count, the mean of
// the two middle runs for an even one, and keeps the workload's fixed figures.
func TestMedianOf(t *testing.T) {
	run := func(load string, running time.Duration, claims int, schedCPU float64) result {
		return result{
			workload: "w", pods: 500, load: load, allRunning: running, created: claims,
			offlineClaims: 4, offlinePrice: 1.43,
			usage: map[localcluster.Component]procUsage{localcluster.JoineryScheduler: {cpuSeconds: schedCPU}},
		}
	}
	for _, tc := range []struct {
		name        string
		runs        []result
		wantLoad    string
		wantRunning time.Duration
		wantClaims  int
		wantCPU     float64
	}{
		{
			name:     "odd",
			runs:     []result{run("3.00", 40*time.Second, 9, 5), run("1.00", 30*time.Second, 4, 7), run("2.00", 50*time.Second, 5, 6)},
			wantLoad: "2.00", wantRunning: 40 * time.Second, wantClaims: 5, wantCPU: 6,
		},
		{
			name:     "even",
			runs:     []result{run("1.00", 30*time.Second, 4, 4), run("2.00", 40*time.Second, 6, 5)},
			wantLoad: "1.50", wantRunning: 35 * time.Second, wantClaims: 5, wantCPU: 4.5,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := medianOf(tc.runs)
			if m.load != tc.wantLoad || m.allRunning != tc.wantRunning || m.created != tc.wantClaims {
				t.Errorf("median load %s, all Running %s, NodeClaims %d; want %s, %s, %d", m.load, m.allRunning, m.created, tc.wantLoad, tc.wantRunning, tc.wantClaims)
			}
			if got := m.usage[localcluster.JoineryScheduler].cpuSeconds; got != tc.wantCPU {
				t.Errorf("median joinery-scheduler CPU %v, want %v", got, tc.wantCPU)
			}
			if m.pods != 500 || m.offlineClaims != 4 || m.offlinePrice != 1.43 {
				t.Errorf("fixed figures changed: %+v", m)
			}
			if !strings.Contains(m.workload, "median of") {
				t.Errorf("workload %q does not say it is a median", m.workload)
			}
		})
	}
}
