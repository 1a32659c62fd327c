package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/joinery-dev/joinery/internal/localcluster"
)

// state is what `up` leaves behind for `down`, tests and people: who runs, where, on which ports.
type state struct {
	// SupervisorPID is the background `localcluster serve` that owns the component processes.
	SupervisorPID int                        `json:"supervisorPID"`
	Dir           string                     `json:"dir"`
	LogsDir       string                     `json:"logsDir"`
	Kubeconfig    string                     `json:"kubeconfig"`
	Server        string                     `json:"server"`
	StartedAt     time.Time                  `json:"startedAt"`
	ReadyAfter    string                     `json:"readyAfter"`
	Processes     []localcluster.ProcessInfo `json:"processes"`
	// CloudProvider is joinery's cloud provider: kwok or aws.
	CloudProvider string `json:"cloudProvider,omitempty"`
	// AWSEndpoint is the AWS emulator's URL when the cloud provider is aws.
	AWSEndpoint string `json:"awsEndpoint,omitempty"`
}

func writeState(path string, s state) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	// Rename so a reader never sees half a file.
	return os.Rename(tmp, path)
}

// readState returns the recorded state; os.ErrNotExist when no cluster was started.
func readState(path string) (state, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return state{}, err
	}
	var s state
	if err := json.Unmarshal(data, &s); err != nil {
		return state{}, fmt.Errorf("decode %s: %w", path, err)
	}
	return s, nil
}

// alive reports whether pid names a live process (a zombie counts as gone).
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The field after the parenthesised command name is the state; Z is a zombie.
	for i := len(status) - 1; i > 0; i-- {
		if status[i] == ')' && i+2 < len(status) {
			return status[i+2] != 'Z'
		}
	}
	return true
}
