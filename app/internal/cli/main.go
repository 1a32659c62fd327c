// Package cli is joinery's command-line tool (also a kubectl plugin when installed as
// kubectl-joinery): snapshot a cluster, simulate changes offline with the engine the
// binaries run, explain why a pod is pending or a node is not disrupted, and show what each
// NodePool costs.
//
// Exit codes: 0 success (simulate: no change), 1 simulate: the cluster would change, 2 error.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/joinery-dev/joinery/internal/version"
)

// Exit codes.
const (
	exitOK      = 0
	exitChanged = 1
	exitError   = 2
)

// errChanged ends simulate with exitChanged after its output is written.
var errChanged = errors.New("the cluster would change")

// Run executes the command line args (without the program name) and returns the exit code;
// the engine runs outOfTree's scheduler plugins beside the in-tree ones.
func Run(args []string, stdout, stderr io.Writer, outOfTree frameworkruntime.Registry) int {
	// The engine's packages log through klog; a CLI prints its answer, not their progress.
	klog.SetOutput(io.Discard)
	klog.LogToStderr(false)
	cmd := newRootCommand(outOfTree)
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	err := cmd.Execute()
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errChanged):
		return exitChanged
	default:
		fmt.Fprintln(stderr, "Error:", err)
		return exitError
	}
}

func newRootCommand(outOfTree frameworkruntime.Registry) *cobra.Command {
	root := &cobra.Command{
		Use:           "joinery",
		Short:         "Snapshot a cluster, try changes offline, explain joinery's decisions and costs",
		Version:       version.String("joinery"),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	if strings.HasPrefix(filepath.Base(os.Args[0]), "kubectl-") {
		// Installed as a kubectl plugin: help says `kubectl joinery ...`.
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl joinery"}
	}
	// cobra's own --version (-v), declared before cobra merges pflag's global flags, among which
	// kube-scheduler's verflag registers a --version of another type (app links both).
	root.Flags().BoolP("version", "v", false, "version for "+root.Name())
	if global := pflag.CommandLine.Lookup("version"); global != nil {
		global.Hidden = true // the subcommands' help lists no flag the CLI does not act on
	}
	cluster := &clusterFlags{}
	cluster.bind(root)
	root.AddCommand(newSnapshotCommand(cluster), newSimulateCommand(outOfTree), newExplainCommand(cluster, outOfTree), newCostCommand(cluster, outOfTree))
	return root
}
