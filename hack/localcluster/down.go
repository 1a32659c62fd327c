package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/joinery-dev/joinery/internal/localcluster"
)

// downGrace is how long the supervisor gets to stop the components in order; kube-apiserver
// alone may take 15 s before it is killed.
const downGrace = 60 * time.Second

// down stops the cluster recorded in state.json: the supervisor stops every component by its
// pid; then any pid still alive is killed by that pid, the ports are checked free and the
// data removed unless keep.
func down(p paths, keep bool) error {
	s, err := readState(p.statePath())
	if errors.Is(err, os.ErrNotExist) {
		say("no local cluster is running (%s not found)", p.statePath())
		return nil
	}
	if err != nil {
		return err
	}
	say("stopping the local cluster (supervisor pid %d)", s.SupervisorPID)
	if alive(s.SupervisorPID) {
		if err := syscall.Kill(s.SupervisorPID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("signal supervisor %d: %w", s.SupervisorPID, err)
		}
		waitGone(s.SupervisorPID, downGrace)
	}
	var errs []error
	for i := len(s.Processes) - 1; i >= 0; i-- {
		proc := s.Processes[i]
		if !alive(proc.PID) {
			continue
		}
		say("%s (pid %d) outlived the supervisor; stopping it", proc.Name, proc.PID)
		syscall.Kill(proc.PID, syscall.SIGTERM)
		if !waitGone(proc.PID, 15*time.Second) {
			syscall.Kill(proc.PID, syscall.SIGKILL)
			if !waitGone(proc.PID, 5*time.Second) {
				errs = append(errs, fmt.Errorf("%s (pid %d) does not exit", proc.Name, proc.PID))
			}
		}
	}
	for _, proc := range s.Processes {
		for _, port := range proc.Ports {
			if localcluster.PortInUse(port) {
				errs = append(errs, fmt.Errorf("port %d of %s is still in use", port, proc.Name))
			}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if !keep {
		if err := os.RemoveAll(p.clusterDir); err != nil {
			return fmt.Errorf("remove cluster data: %w", err)
		}
		if err := os.Remove(p.kubeconfig); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove kubeconfig: %w", err)
		}
	} else {
		os.Remove(p.statePath())
	}
	say("stopped %d processes; ports free; logs kept in %s", len(s.Processes)+1, p.logsDir)
	return nil
}

// waitGone polls until pid is gone or timeout passes, and reports whether it is gone.
func waitGone(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return !alive(pid)
}
