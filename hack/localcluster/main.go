// Command localcluster runs joinery's local cluster: a real etcd, kube-apiserver,
// kube-controller-manager, kwok, joinery-scheduler and joinery-controller as processes on
// 127.0.0.1 (see internal/localcluster).
//
//	localcluster up      start in the background, return once ready (make cluster)
//	localcluster down    stop every process, free the ports, remove the data (make cluster-down)
//	localcluster run     start, apply a sample workload and watch it live; Ctrl-C stops (make run)
//
// --cloud-provider=aws (or CLOUD_PROVIDER=aws) runs joinery with its AWS provider against the
// AWS emulator (cmd/awsemulator) instead of the kwok provider.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/joinery-dev/joinery/internal/localcluster"
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

func (p paths) options(cloudProvider string) (localcluster.Options, error) {
	components, err := localcluster.ComponentsFor(cloudProvider)
	if err != nil {
		return localcluster.Options{}, err
	}
	return localcluster.Options{
		BinDir:         p.toolsDir,
		Dir:            p.clusterDir,
		LogsDir:        p.logsDir,
		KubeconfigPath: p.kubeconfig,
		JoineryBinDir:  p.joineryBin,
		CRDDir:         filepath.Join(p.root, "manifests", "crds"),
		ChartDir:       filepath.Join(p.root, "charts", "joinery"),
		Components:     components,
		CloudProvider:  cloudProvider,
	}, nil
}

// cloudProviderEnv names the cloud provider when --cloud-provider is not given, as
// `make run CLOUD_PROVIDER=aws` passes it.
const cloudProviderEnv = "CLOUD_PROVIDER"

func defaultCloudProvider() string {
	if v := os.Getenv(cloudProviderEnv); v != "" {
		return v
	}
	return localcluster.CloudProviderKwok
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
	cloudProvider := flags.String("cloud-provider", defaultCloudProvider(), "up, run: joinery's cloud provider, kwok or aws (the AWS emulator); default $"+cloudProviderEnv+" or kwok")
	if err := flags.Parse(os.Args[2:]); err != nil {
		os.Exit(2)
	}
	if _, err := localcluster.ComponentsFor(*cloudProvider); err != nil {
		fmt.Fprintln(os.Stderr, "localcluster:", err)
		os.Exit(2)
	}

	switch os.Args[1] {
	case "up":
		err = up(p, *build, *cloudProvider)
	case "serve": // the background supervisor `up` starts; not for people
		err = serve(p, *cloudProvider)
	case "down":
		err = down(p, *keep)
	case "run":
		err = run(p, *build, *cloudProvider)
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
  --build=false         do not build binaries first
  --keep                (down) keep etcd data, certificates and kubeconfig
  --cloud-provider=aws  (up, run) joinery's AWS provider against the AWS emulator instead of
                        kwok; also CLOUD_PROVIDER=aws
`)
}
