// Package settings reads Karpenter's settings from the environment (BATCH_IDLE_DURATION,
// LOG_LEVEL, METRICS_PORT, ...) for joinery's binaries. A setting that is unset stays nil, so
// each binary keeps its own default, flag or scheduler-config value; a setting that is set but
// invalid is an error naming it, so a binary stops at start rather than run misconfigured.
// FEATURE_GATES has its own package (internal/featuregates).
package settings

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/joinery-dev/joinery/simulation/solver"
)

// Settings are Karpenter's settings as set in the environment; nil means unset.
type Settings struct {
	BatchIdleDuration *time.Duration // BATCH_IDLE_DURATION
	BatchMaxDuration  *time.Duration // BATCH_MAX_DURATION
	PreferencePolicy  *solver.PreferencePolicy
	MinValuesPolicy   *solver.MinValuesPolicy
	LogLevel          *string // LOG_LEVEL: debug, info or error
	MetricsPort       *int    // METRICS_PORT
	HealthProbePort   *int    // HEALTH_PROBE_PORT
	KubeClientQPS     *float32
	KubeClientBurst   *int
	// CPURequests is the container's CPU request in millicores (CPU_REQUESTS).
	CPURequests *int64
	// MemoryLimit is the container's memory limit in bytes (MEMORY_LIMIT); -1 is none.
	MemoryLimit             *int64
	DisableLeaderElection   *bool   // DISABLE_LEADER_ELECTION
	LeaderElectionName      *string // LEADER_ELECTION_NAME
	LeaderElectionNamespace *string // LEADER_ELECTION_NAMESPACE
	// IgnoreDRARequests (IGNORE_DRA_REQUESTS) leaves pods' resource claims out of the
	// simulation, as Karpenter does; joinery's default is false.
	IgnoreDRARequests *bool
	// LogOutputPaths (LOG_OUTPUT_PATHS) are where log lines go: stdout, stderr or file paths.
	LogOutputPaths []string
	// LogErrorOutputPaths (LOG_ERROR_OUTPUT_PATHS) are where the logger reports its own
	// failures (a sink it cannot write to, say).
	LogErrorOutputPaths []string
	EnableProfiling     *bool // ENABLE_PROFILING
	// AMIRefreshInterval (AMI_REFRESH_INTERVAL) and SubnetRefreshInterval
	// (SUBNET_REFRESH_INTERVAL) are how often an EC2NodeClass's AMIs, resp. its subnets and
	// security groups, are resolved again; at least MinRefreshInterval, as in Karpenter.
	AMIRefreshInterval    *time.Duration
	SubnetRefreshInterval *time.Duration
	// DisableDryRun (DISABLE_DRY_RUN) skips the EC2 dry-run authorization checks of the
	// EC2NodeClass validation.
	DisableDryRun *bool
}

// MinRefreshInterval is the shortest AMI_REFRESH_INTERVAL and SUBNET_REFRESH_INTERVAL
// Karpenter accepts.
const MinRefreshInterval = time.Minute

// LogLevels are LOG_LEVEL's values, Karpenter's.
var LogLevels = []string{"debug", "info", "error"}

// Names are the environment variables FromEnv reads, for documentation and tests.
var Names = []string{"BATCH_IDLE_DURATION", "BATCH_MAX_DURATION", "PREFERENCE_POLICY", "MIN_VALUES_POLICY", "LOG_LEVEL",
	"METRICS_PORT", "HEALTH_PROBE_PORT", "KUBE_CLIENT_QPS", "KUBE_CLIENT_BURST", "CPU_REQUESTS", "MEMORY_LIMIT",
	"DISABLE_LEADER_ELECTION", "LEADER_ELECTION_NAME", "LEADER_ELECTION_NAMESPACE", "IGNORE_DRA_REQUESTS",
	"LOG_OUTPUT_PATHS", "LOG_ERROR_OUTPUT_PATHS", "ENABLE_PROFILING", "AMI_REFRESH_INTERVAL", "SUBNET_REFRESH_INTERVAL",
	"DISABLE_DRY_RUN"}

// FromEnv reads every setting through lookup (os.LookupEnv). An empty value counts as unset.
// The error lists every invalid setting by name.
func FromEnv(lookup func(string) (string, bool)) (Settings, error) {
	r := reader{lookup: lookup}
	s := Settings{
		BatchIdleDuration:       r.positiveDuration("BATCH_IDLE_DURATION"),
		BatchMaxDuration:        r.positiveDuration("BATCH_MAX_DURATION"),
		PreferencePolicy:        oneOf(&r, "PREFERENCE_POLICY", solver.PreferencePolicies()),
		MinValuesPolicy:         oneOf(&r, "MIN_VALUES_POLICY", solver.MinValuesPolicies()),
		LogLevel:                oneOf(&r, "LOG_LEVEL", LogLevels),
		MetricsPort:             r.port("METRICS_PORT"),
		HealthProbePort:         r.port("HEALTH_PROBE_PORT"),
		KubeClientQPS:           r.qps("KUBE_CLIENT_QPS"),
		KubeClientBurst:         r.positiveInt("KUBE_CLIENT_BURST"),
		CPURequests:             r.int64("CPU_REQUESTS", 1),
		MemoryLimit:             r.int64("MEMORY_LIMIT", -1),
		DisableLeaderElection:   r.bool("DISABLE_LEADER_ELECTION"),
		LeaderElectionName:      r.string("LEADER_ELECTION_NAME"),
		LeaderElectionNamespace: r.string("LEADER_ELECTION_NAMESPACE"),
		IgnoreDRARequests:       r.bool("IGNORE_DRA_REQUESTS"),
		LogOutputPaths:          r.logPaths("LOG_OUTPUT_PATHS"),
		LogErrorOutputPaths:     r.logPaths("LOG_ERROR_OUTPUT_PATHS"),
		EnableProfiling:         r.bool("ENABLE_PROFILING"),
		AMIRefreshInterval:      r.durationAtLeast("AMI_REFRESH_INTERVAL", MinRefreshInterval),
		SubnetRefreshInterval:   r.durationAtLeast("SUBNET_REFRESH_INTERVAL", MinRefreshInterval),
		DisableDryRun:           r.bool("DISABLE_DRY_RUN"),
	}
	if s.BatchIdleDuration != nil && s.BatchMaxDuration != nil && *s.BatchIdleDuration > *s.BatchMaxDuration {
		r.errs = append(r.errs, fmt.Errorf("BATCH_IDLE_DURATION=%s must not be longer than BATCH_MAX_DURATION=%s", s.BatchIdleDuration, s.BatchMaxDuration))
	}
	return s, errors.Join(r.errs...)
}

// ApplyRuntime sizes the Go runtime to the container as Karpenter does: GOMAXPROCS to the CPU
// request rounded up (unless GOMAXPROCS is set), and the garbage collector's soft memory limit
// to 90% of the memory limit. It returns what it changed, for the start-up log.
func (s Settings) ApplyRuntime(lookup func(string) (string, bool)) []any {
	var changed []any
	if s.CPURequests != nil {
		if _, set := lookup("GOMAXPROCS"); !set {
			procs := int(max(1, (*s.CPURequests+999)/1000))
			runtime.GOMAXPROCS(procs)
			changed = append(changed, "GOMAXPROCS", procs)
		}
	}
	if s.MemoryLimit != nil && *s.MemoryLimit > 0 {
		limit := *s.MemoryLimit / 10 * 9
		debug.SetMemoryLimit(limit)
		changed = append(changed, "memoryLimit", limit)
	}
	return changed
}

// reader parses settings and collects their errors.
type reader struct {
	lookup func(string) (string, bool)
	errs   []error
}

func (r *reader) get(name string) (string, bool) {
	v, ok := r.lookup(name)
	v = strings.TrimSpace(v)
	return v, ok && v != ""
}

func (r *reader) fail(name, value, why string) {
	r.errs = append(r.errs, fmt.Errorf("%s=%q: %s", name, value, why))
}

func (r *reader) positiveDuration(name string) *time.Duration {
	v, ok := r.get(name)
	if !ok {
		return nil
	}
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		r.fail(name, v, "not a duration such as 1s, 500ms or 2m")
	case d <= 0:
		r.fail(name, v, "must be positive")
	default:
		return &d
	}
	return nil
}

// durationAtLeast reads a duration of at least lowest.
func (r *reader) durationAtLeast(name string, lowest time.Duration) *time.Duration {
	v, ok := r.get(name)
	if !ok {
		return nil
	}
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		r.fail(name, v, "not a duration such as 5m or 1h")
	case d < lowest:
		r.fail(name, v, "must be at least "+lowest.String())
	default:
		return &d
	}
	return nil
}

// logPaths reads a comma-separated list of log sinks (ParseLogPaths).
func (r *reader) logPaths(name string) []string {
	v, ok := r.get(name)
	if !ok {
		return nil
	}
	paths, err := ParseLogPaths(v)
	if err != nil {
		r.fail(name, v, err.Error())
		return nil
	}
	return paths
}

func oneOf[T ~string](r *reader, name string, valid []T) *T {
	v, ok := r.get(name)
	if !ok {
		return nil
	}
	// Karpenter's values are case-sensitive; so are joinery's.
	if t := T(v); slices.Contains(valid, t) {
		return &t
	}
	names := make([]string, len(valid))
	for i, t := range valid {
		names[i] = string(t)
	}
	r.fail(name, v, "must be one of "+strings.Join(names, ", "))
	return nil
}

func (r *reader) port(name string) *int {
	v, ok := r.get(name)
	if !ok {
		return nil
	}
	p, err := strconv.Atoi(v)
	if err != nil || p < 1 || p > 65535 {
		r.fail(name, v, "must be a port number from 1 to 65535")
		return nil
	}
	return &p
}

func (r *reader) qps(name string) *float32 {
	v, ok := r.get(name)
	if !ok {
		return nil
	}
	f, err := strconv.ParseFloat(v, 32)
	if err != nil || f <= 0 || math.IsInf(f, 0) {
		r.fail(name, v, "must be a positive number")
		return nil
	}
	q := float32(f)
	return &q
}

func (r *reader) positiveInt(name string) *int {
	v, ok := r.get(name)
	if !ok {
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		r.fail(name, v, "must be a positive integer")
		return nil
	}
	return &n
}

// int64 reads an integer of at least lowest.
func (r *reader) int64(name string, lowest int64) *int64 {
	v, ok := r.get(name)
	if !ok {
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lowest {
		r.fail(name, v, fmt.Sprintf("must be an integer of at least %d", lowest))
		return nil
	}
	return &n
}

func (r *reader) bool(name string) *bool {
	v, ok := r.get(name)
	if !ok {
		return nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.fail(name, v, "must be true or false")
		return nil
	}
	return &b
}

func (r *reader) string(name string) *string {
	v, ok := r.get(name)
	if !ok {
		return nil
	}
	return &v
}
