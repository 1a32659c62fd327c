package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/joinery-dev/joinery/internal/localcluster"
)

// kubeComponents are what hack/tools.sh builds for the local cluster.
var kubeComponents = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kwok"}

// ensureBinaries builds the Kubernetes components (hack/tools.sh rebuilds only what changed)
// and joinery's binaries (make build), telling the user what is happening: a first build
// takes several minutes and must not look like a hang.
func ensureBinaries(ctx context.Context, p paths) error {
	fresh := localcluster.CheckBinaries(p.toolsDir) != nil
	for _, c := range kubeComponents[2:] {
		if _, err := os.Stat(filepath.Join(p.toolsDir, c)); err != nil {
			fresh = true
		}
	}
	if fresh {
		say("building etcd, kube-apiserver, kube-controller-manager and kwok from go.mod into %s", p.toolsDir)
		say("a first build on a cold Go cache takes several minutes on 2 cores; later runs reuse it")
	}
	args := append([]string{filepath.Join(p.root, "hack", "tools.sh")}, kubeComponents...)
	if err := runWithProgress(ctx, p.root, "Kubernetes components", args...); err != nil {
		return err
	}
	say("building joinery-scheduler and joinery-controller (make build)")
	return runWithProgress(ctx, p.root, "joinery binaries", "make", "--no-print-directory", "build")
}

// runWithProgress runs a command with its output on our terminal and says every 30 s that it
// is still working.
func runWithProgress(ctx context.Context, dir, what string, argv ...string) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("build %s: %w", what, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("build %s: %w", what, err)
			}
			return nil
		case <-tick.C:
			say("still building %s (%s so far)", what, time.Since(begin).Round(time.Second))
		}
	}
}

// say prints a progress line.
func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "==> "+format+"\n", args...)
}
