package benchlive

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times; 100 on every Linux
// architecture Go supports.
const clockTicks = 100

// procUsage is a process's CPU time so far and its peak resident set.
type procUsage struct {
	cpuSeconds float64
	peakRSSMiB float64
}

// readUsage reads pid's utime+stime from /proc/<pid>/stat and VmHWM from /proc/<pid>/status.
func readUsage(pid int) (procUsage, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procUsage{}, fmt.Errorf("read stat of %d: %w", pid, err)
	}
	// The command name may hold spaces; the fields after it start past the last ')'.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return procUsage{}, fmt.Errorf("stat of %d: no command name", pid)
	}
	fields := strings.Fields(string(stat[i+1:]))
	// fields[0] is the state (field 3); utime and stime are fields 14 and 15.
	if len(fields) < 13 {
		return procUsage{}, fmt.Errorf("stat of %d: %d fields", pid, len(fields))
	}
	var ticks float64
	for _, f := range fields[11:13] {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return procUsage{}, fmt.Errorf("stat of %d: %w", pid, err)
		}
		ticks += v
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procUsage{}, fmt.Errorf("read status of %d: %w", pid, err)
	}
	var hwm float64
	for line := range strings.SplitSeq(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				return procUsage{}, fmt.Errorf("status of %d: VmHWM %q: %w", pid, rest, err)
			}
			hwm = kb / 1024
		}
	}
	return procUsage{cpuSeconds: ticks / clockTicks, peakRSSMiB: hwm}, nil
}

// loadAverage is /proc/loadavg's 1-minute figure.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}
