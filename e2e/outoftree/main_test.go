// Package outoftree is the e2e suite of out-of-tree scheduler plugins: joinery-scheduler and
// joinery-controller built with a sample plugin (maxperlabel, registered with app.WithPlugin
// by the mains under cmd/) run on the local cluster with a profile that enables it, and
// provisioning and consolidation plan with it as kube-scheduler schedules with it.
package outoftree

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/joinery-dev/joinery/e2e/framework"
	"github.com/joinery-dev/joinery/e2e/outoftree/maxperlabel"
	"github.com/joinery-dev/joinery/internal/localcluster"
)

// cappedLabel marks the pods the plugin counts; maxPerNode of them fit on one node.
const (
	cappedLabel = "joinery.dev/e2e-capped"
	maxPerNode  = 2
)

var env *framework.Env

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	bin, err := os.MkdirTemp("", "joinery-outoftree-bin-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	defer os.RemoveAll(bin)
	if err := buildBinaries(bin); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	return framework.Main(m, &env, func(o *localcluster.Options) {
		o.JoineryBinDir = bin
		o.SchedulerPlugins = []localcluster.SchedulerPlugin{{
			Name: maxperlabel.Name,
			Args: map[string]any{"labelKey": cappedLabel, "maxPerNode": maxPerNode},
		}}
	})
}

// buildBinaries builds the suite's joinery-scheduler and joinery-controller (cmd/) into dir.
func buildBinaries(dir string) error {
	root, err := localcluster.RepoRoot()
	if err != nil {
		return err
	}
	// -s -w: like make build's binaries, two large links without a symbol table and DWARF.
	cmd := exec.Command("go", "build", "-ldflags=-s -w", "-o", dir+string(filepath.Separator),
		"./e2e/outoftree/cmd/joinery-scheduler", "./e2e/outoftree/cmd/joinery-controller")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the suite's binaries: %w\n%s", err, out)
	}
	return nil
}
