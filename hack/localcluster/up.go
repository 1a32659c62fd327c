package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/joinery-dev/joinery/internal/awsemulator"
	"github.com/joinery-dev/joinery/internal/localcluster"
)

// up starts `localcluster serve` in its own session, so the cluster outlives this command
// and the terminal, shows the supervisor's progress, and returns once state.json says ready.
func up(p paths, build bool, cloudProvider string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if s, err := readState(p.statePath()); err == nil && alive(s.SupervisorPID) {
		printUsage(s)
		return fmt.Errorf("a local cluster is already running (supervisor pid %d); `make cluster-down` stops it", s.SupervisorPID)
	}
	if build {
		if err := ensureBinaries(ctx, p); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(p.logsDir, 0o755); err != nil {
		return fmt.Errorf("create logs dir: %w", err)
	}
	if err := os.MkdirAll(p.clusterDir, 0o755); err != nil {
		return fmt.Errorf("create cluster dir: %w", err)
	}
	os.Remove(p.statePath())

	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own binary: %w", err)
	}
	logPath := filepath.Join(p.logsDir, "localcluster.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("open supervisor log: %w", err)
	}
	defer logFile.Close()
	cmd := exec.Command(self, "serve", "--cloud-provider="+cloudProvider)
	cmd.Dir = p.root
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// A new session: no controlling terminal, so closing it or Ctrl-C there leaves the cluster up.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	say("starting the local cluster with the %s cloud provider (logs in %s)", cloudProvider, p.logsDir)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start supervisor: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	follow := newLogFollower(logPath)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(startTimeout + 30*time.Second)
	for {
		follow.printNew(os.Stderr)
		if s, err := readState(p.statePath()); err == nil {
			say("local cluster ready in %s", s.ReadyAfter)
			printUsage(s)
			return nil
		}
		select {
		case err := <-exited:
			follow.printNew(os.Stderr)
			return fmt.Errorf("the local cluster did not start (%v); see %s", err, logPath)
		case <-ctx.Done():
			say("interrupted; stopping what started")
			return down(p, false)
		case <-timeout:
			return fmt.Errorf("the local cluster was not ready in %s; see %s, then `make cluster-down`", startTimeout, logPath)
		case <-tick.C:
		}
	}
}

// serve is the supervisor: it starts the cluster, records state.json, and stops the cluster
// when `down` sends SIGTERM. Its component processes die with it (SIGKILL on parent death),
// so no component outlives a killed supervisor.
func serve(p paths, cloudProvider string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	opts, err := p.options(cloudProvider)
	if err != nil {
		return err
	}
	opts.Logger = logger
	// `down` decides whether data stays (--keep) and removes it itself.
	opts.KeepData = true
	begin := time.Now()
	startCtx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	c, err := localcluster.Start(startCtx, opts)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	s := state{
		SupervisorPID: os.Getpid(),
		Dir:           p.clusterDir,
		LogsDir:       p.logsDir,
		Kubeconfig:    c.KubeconfigPath(),
		Server:        c.Server(),
		StartedAt:     begin,
		ReadyAfter:    time.Since(begin).Round(100 * time.Millisecond).String(),
		Processes:     c.Processes(),
		CloudProvider: c.CloudProvider(),
		AWSEndpoint:   c.AWSEmulatorURL(),
	}
	if err := writeState(p.statePath(), s); err != nil {
		return errors.Join(err, c.Stop())
	}
	select {
	case <-ctx.Done():
		logger.Info("stopping on request")
	case err := <-c.Crashed():
		logger.Error("a component crashed; stopping the cluster", "err", err)
	}
	return c.Stop()
}

func printUsage(s state) {
	fmt.Printf(`
kubeconfig: %s   (API server %s)
use it with:
  export KUBECONFIG=%s
  kubectl get nodes,pods -A
stop it with: make cluster-down
`, s.Kubeconfig, s.Server, s.Kubeconfig)
	if s.AWSEndpoint != "" {
		fmt.Printf(`AWS emulator: %s   (admin API %s%s; awsemulator.AdminClient drives it)
`, s.AWSEndpoint, s.AWSEndpoint, awsemulator.AdminPathPrefix)
	}
}

// logFollower prints the lines appended to a file since the last call.
type logFollower struct {
	path   string
	offset int64
}

func newLogFollower(path string) *logFollower { return &logFollower{path: path} }

func (f *logFollower) printNew(w io.Writer) {
	file, err := os.Open(f.path)
	if err != nil {
		return
	}
	defer file.Close()
	if _, err := file.Seek(f.offset, io.SeekStart); err != nil {
		return
	}
	reader := bufio.NewReader(file)
	for {
		line, err := reader.ReadString('\n')
		if err != nil { // keep a partial line for the next call
			return
		}
		f.offset += int64(len(line))
		fmt.Fprint(w, "    ", strings.TrimLeft(line, " "))
	}
}
