package localcluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func neverReady(context.Context) error { return errors.New("not yet") }

func TestWaitReadyReportsCrashWithLogTail(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "crasher.log")
	script := `for i in $(seq 1 40); do echo "line $i"; done; echo "fatal: cannot start"; exit 3`
	p, err := startProcess("crasher", "/bin/sh", []string{"-c", script}, logPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	err = p.waitReady(ctx, neverReady)
	if err == nil {
		t.Fatal("waitReady succeeded for a process that exited")
	}
	for _, want := range []string{"crasher exited unexpectedly", "exit status 3", "fatal: cannot start", "line 40"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not contain %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "line 5\n") {
		t.Errorf("error carries the whole log, want only the last %d lines:\n%v", logTailLines, err)
	}
}

func TestStop(t *testing.T) {
	cases := []struct {
		name       string
		script     string
		wantSignal syscall.Signal
	}{
		{"exits on SIGTERM", "exec sleep 60", syscall.SIGTERM},
		{"ignores SIGTERM and is killed", `trap "" TERM; printf 'trap %s\n' armed; while :; do sleep 0.1; done`, syscall.SIGKILL},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			logPath := filepath.Join(t.TempDir(), "p.log")
			p, err := startProcess("p", "/bin/sh", []string{"-c", tc.script}, logPath)
			if err != nil {
				t.Fatal(err)
			}
			p.grace = 500 * time.Millisecond
			// Signal only once the trap is in place. The log's first line echoes the command,
			// so the marker is assembled by printf to appear only once the script runs.
			if err := p.waitReady(t.Context(), func(context.Context) error {
				if tc.wantSignal == syscall.SIGKILL && !strings.Contains(p.logTail(), "trap armed") {
					return errors.New("trap not set yet")
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if err := p.stop(); err != nil {
				t.Fatalf("stop: %v", err)
			}
			status := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
			if !status.Signaled() || status.Signal() != tc.wantSignal {
				t.Errorf("process ended with %v, want killed by %v", p.cmd.ProcessState, tc.wantSignal)
			}
			if err := syscall.Kill(p.pid(), 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("process %d still exists (kill -0: %v)", p.pid(), err)
			}
			if err := p.stop(); err != nil {
				t.Errorf("stopping a stopped process: %v", err)
			}
		})
	}
}

func TestStartProcessOwnProcessGroup(t *testing.T) {
	p, err := startProcess("p", "/bin/sh", []string{"-c", "exec sleep 60"}, filepath.Join(t.TempDir(), "p.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.stop()
	pgid, err := syscall.Getpgid(p.pid())
	if err != nil {
		t.Fatal(err)
	}
	if pgid != p.pid() {
		t.Errorf("process group %d, want its own (%d)", pgid, p.pid())
	}
}

func TestTailFile(t *testing.T) {
	cases := []struct {
		name    string
		content string
		n       int
		want    []string
	}{
		{"empty", "", 3, nil},
		{"fewer lines than asked", "a\nb\n", 3, []string{"a", "b"}},
		{"more lines than asked", "a\nb\nc\nd\n", 2, []string{"c", "d"}},
		{"no trailing newline", "a\nb", 1, []string{"b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := tailFile(path, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("tailFile = %q, want %q", got, tc.want)
			}
		})
	}
}
