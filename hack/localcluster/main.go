// Command localcluster runs joinery's local cluster: a real etcd, kube-apiserver,
// kube-controller-manager, kwok, joinery-scheduler and joinery-controller as processes on
// 127.0.0.1 (see e2e/localcluster).
//
//	localcluster up      start in the background, return once ready (make cluster)
//	localcluster down    stop every process, free the ports, remove the data (make cluster-down)
//	localcluster run     start, apply a sample workload and watch it live; Ctrl-C stops (make run)
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/joinery-dev/joinery/e2e/localcluster"
)

// paths are where the local cluster keeps its files, all under the ignored .local folder.
type paths struct {
	root       string // repository root
	toolsDir   string // etcd, kube-apiserver, kube-controller-manager, kwok
	joineryBin string // joinery-scheduler, joinery-controller
	clusterDir string // data, certificates, state.json
	logsDir    string
	kubeconfig string
}

func newPaths() (paths, error) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		return paths{}, err
	}
	tools, err := localcluster.DefaultBinDir()
	if err != nil {
		return paths{}, err
	}
	local := filepath.Join(root, ".local")
	return paths{
		root:       root,
		toolsDir:   tools,
		joineryBin: filepath.Join(root, "bin"),
		clusterDir: filepath.Join(local, "cluster"),
		logsDir:    filepath.Join(local, "logs"),
		kubeconfig: filepath.Join(local, "kubeconfig"),
	}, nil
}

func (p paths) statePath() string { return filepath.Join(p.clusterDir, "state.json") }

func (p paths) options() localcluster.Options {
	return localcluster.Options{
		BinDir:         p.toolsDir,
		Dir:            p.clusterDir,
		LogsDir:        p.logsDir,
		KubeconfigPath: p.kubeconfig,
		JoineryBinDir:  p.joineryBin,
		CRDDir:         filepath.Join(p.root, "manifests", "crds"),
		Components:     localcluster.AllComponents,
	}
}

// startTimeout bounds start-up with built binaries; the figure to beat is 60 s.
const startTimeout = 3 * time.Minute

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	p, err := newPaths()
	if err != nil {
		fmt.Fprintln(os.Stderr, "localcluster:", err)
		os.Exit(1)
	}
	flags := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	build := flags.Bool("build", true, "build missing or stale binaries first (hack/tools.sh, make build)")
	keep := flags.Bool("keep", false, "down: keep the cluster's data (etcd, certificates, kubeconfig)")
	if err := flags.Parse(os.Args[2:]); err != nil {
		os.Exit(2)
	}

	switch os.Args[1] {
	case "up":
		err = up(p, *build)
	case "serve": // the background supervisor `up` starts; not for people
		err = serve(p)
	case "down":
		err = down(p, *keep)
	case "run":
		err = run(p, *build)
	default:
		usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "localcluster:", err)
		var exit exitCode
		if errors.As(err, &exit) {
			os.Exit(int(exit))
		}
		os.Exit(1)
	}
}

// exitCode lets a command choose its exit status.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func usage() {
	fmt.Fprint(os.Stderr, `usage: localcluster up|down|run [flags]
  up     start the local cluster in the background; returns once it is ready
  down   stop it: every process ends, ports are freed, data removed unless --keep
  run    start it, apply a sample NodePool and workload, show them live; Ctrl-C stops
flags:
  --build=false   do not build binaries first
  --keep          (down) keep etcd data, certificates and kubeconfig
`)
}
