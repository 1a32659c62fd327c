package localcluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// defaultStopGrace is how long a component gets to exit after SIGTERM before it is killed.
// kube-apiserver drains for a few seconds by default; etcd exits almost at once.
const defaultStopGrace = 15 * time.Second

// logTailLines is how much of a component's log an error carries when the component fails.
const logTailLines = 30

// process is one running component: its command, its log file and a channel closed on exit.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	logFile *os.File
	grace   time.Duration
	ports   []int // the ports the component was configured with
	// killed marks a process stopped on purpose by Cluster.KillComponent, not a crash.
	killed atomic.Bool

	exited  chan struct{}
	waitErr error // valid once exited is closed
}

// startProcess starts binary with args and, besides this process's environment, env; its
// stdout and stderr are appended to logPath.
func startProcess(name, binary string, args []string, logPath string, env ...string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s log: %w", name, err)
	}
	fmt.Fprintf(logFile, "=== %s %s %s\n", time.Now().Format(time.RFC3339), binary, strings.Join(args, " "))

	cmd := exec.Command(binary, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Own process group: a Ctrl-C in the terminal reaches only our process, which then
		// stops the components in order instead of having them all die at once.
		Setpgid: true,
		// If the test binary itself dies (go test -timeout panics, SIGKILL), don't leave etcd
		// and kube-apiserver running with nobody to stop them.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, binary, err)
	}

	p := &process{
		name:    name,
		cmd:     cmd,
		logPath: logPath,
		logFile: logFile,
		grace:   defaultStopGrace,
		exited:  make(chan struct{}),
	}
	go func() {
		p.waitErr = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	return p, nil
}

// pid is the operating-system process id of the component.
func (p *process) pid() int { return p.cmd.Process.Pid }

// hasExited reports whether the process is gone.
func (p *process) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// waitReady polls ready until it succeeds, the process exits, or ctx ends. The last probe
// error is kept so a timeout says what was still failing.
func (p *process) waitReady(ctx context.Context, ready func(context.Context) error) error {
	const interval = 100 * time.Millisecond
	var lastErr error
	for {
		probeCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		lastErr = ready(probeCtx)
		cancel()
		if lastErr == nil {
			return nil
		}
		select {
		case <-p.exited:
			return p.exitError()
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w (last probe: %v)\n%s", p.name, ctx.Err(), lastErr, p.logTail())
		case <-time.After(interval):
		}
	}
}

// exitError describes an unexpected exit, with the end of the log that explains it.
func (p *process) exitError() error {
	return fmt.Errorf("%s exited unexpectedly (%v); last lines of %s:\n%s", p.name, p.waitErr, p.logPath, p.logTail())
}

// logTail returns the last lines of the component's log.
func (p *process) logTail() string {
	lines, err := tailFile(p.logPath, logTailLines)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	return strings.Join(lines, "\n")
}

// stop sends SIGTERM to the process (by its own pid), waits up to its grace period, then
// sends SIGKILL, and returns once the process has exited.
func (p *process) stop() error {
	if p.hasExited() {
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal %s (pid %d): %w", p.name, p.pid(), err)
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(p.grace):
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill %s (pid %d): %w", p.name, p.pid(), err)
	}
	<-p.exited
	return nil
}

// tailFile returns up to n last lines of the file at path.
func tailFile(path string, n int) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ring := make([]string, 0, n)
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 64*1024), 1024*1024)
	for scanner.Scan() {
		if len(ring) == n {
			ring = ring[1:]
		}
		ring = append(ring, scanner.Text())
	}
	return ring, scanner.Err()
}
