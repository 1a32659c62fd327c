package framework

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"github.com/joinery-dev/joinery/internal/localcluster"
)

// CheckStopped returns an error naming every process of procs that still exists and every
// port of theirs that something still listens on.
func CheckStopped(procs []localcluster.ProcessInfo) error {
	var errs []error
	for _, p := range procs {
		if processExists(p.PID) {
			errs = append(errs, fmt.Errorf("%s (pid %d) still runs after Stop", p.Name, p.PID))
		}
		for _, port := range p.Ports {
			if localcluster.PortInUse(port) {
				errs = append(errs, fmt.Errorf("port %d of %s still in use after Stop", port, p.Name))
			}
		}
	}
	return errors.Join(errs...)
}

// processExists reports whether pid is a live process (zombies are reaped by Stop, so any
// entry in /proc counts).
func processExists(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}
