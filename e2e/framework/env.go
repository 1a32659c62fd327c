package framework

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/joinery-dev/joinery/internal/awsemulator"
	"github.com/joinery-dev/joinery/internal/localcluster"
)

// KubeconfigEnv names another cluster for the suites. It is not KUBECONFIG so that a plain
// `go test ./...` never runs e2e tests against whatever cluster a shell points at; `make e2e`
// sets it from KUBECONFIG.
const KubeconfigEnv = "JOINERY_E2E_KUBECONFIG"

// kubeconfigFlag is -kubeconfig. A suite that links controller-runtime's client/config has it
// registered already (that package's init runs first, since this one depends on it); the suite
// then shares that flag instead of panicking on a second registration.
var kubeconfigFlag = kubeconfigFlagOn(flag.CommandLine)

func kubeconfigFlagOn(fs *flag.FlagSet) flag.Value {
	if f := fs.Lookup("kubeconfig"); f != nil {
		return f.Value
	}
	v := new(kubeconfigValue)
	fs.Var(v, "kubeconfig", "run the e2e suites against this cluster instead of starting the local cluster (also "+KubeconfigEnv+")")
	return v
}

// kubeconfigValue is a plain string flag.
type kubeconfigValue string

func (v *kubeconfigValue) String() string     { return string(*v) }
func (v *kubeconfigValue) Set(s string) error { *v = kubeconfigValue(s); return nil }

// startTimeout bounds starting the local cluster with built binaries.
const startTimeout = 3 * time.Minute

// Env is the cluster a suite runs against.
type Env struct {
	RESTConfig *rest.Config
	Client     kubernetes.Interface
	Dynamic    dynamic.Interface
	// Cluster is the local cluster the suite started; nil on another cluster.
	Cluster *localcluster.Cluster
	// StartedIn is how long the local cluster took to become ready.
	StartedIn time.Duration
	// AWS drives the local cluster's AWS emulator; nil unless the suite runs with
	// WithCloudProvider(localcluster.CloudProviderAWS).
	AWS *awsemulator.AdminClient
}

// Option changes the local cluster a suite starts.
type Option func(*localcluster.Options)

// WithCloudProvider runs joinery with the named cloud provider: localcluster.CloudProviderAWS
// adds the AWS emulator and points joinery's binaries at it.
func WithCloudProvider(name string) Option {
	return func(o *localcluster.Options) {
		o.CloudProvider = name
		if components, err := localcluster.ComponentsFor(name); err == nil {
			o.Components = components
		} // an unknown name is reported by localcluster.Start
	}
}

// WithPlainScheduler runs joinery-scheduler without its provisioning plugin
// (localcluster.Options.PlainScheduler): kube-scheduler as a cluster without joinery has it.
func WithPlainScheduler() Option {
	return func(o *localcluster.Options) { o.PlainScheduler = true }
}

// Local reports whether the suite runs on the local cluster it started.
func (e *Env) Local() bool { return e.Cluster != nil }

// RequireLocal skips the test on another cluster: it inspects processes or ports.
func (e *Env) RequireLocal(t *testing.T) {
	t.Helper()
	if !e.Local() {
		t.Skip("needs the local cluster (inspects its processes); running against " + e.RESTConfig.Host)
	}
}

// Main is a suite's TestMain: it connects to the cluster, runs the tests and, on the local
// cluster, stops it and fails the run if any process or port outlived Stop. opts change the
// local cluster it starts.
func Main(m *testing.M, env **Env, opts ...Option) int {
	flag.Parse()
	kubeconfig := kubeconfigFlag.String()
	if kubeconfig == "" {
		kubeconfig = os.Getenv(KubeconfigEnv)
	}
	if kubeconfig != "" {
		e, err := connect(kubeconfig)
		if err != nil {
			fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "e2e: running against %s (%s)\n", e.RESTConfig.Host, kubeconfig)
		*env = e
		return m.Run()
	}

	e, dir, err := startLocal(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: local cluster ready in %s (%s)\n", e.StartedIn.Round(time.Millisecond), e.RESTConfig.Host)
	*env = e
	code := m.Run()
	procs := e.Cluster.Processes()
	if err := e.Cluster.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: stop the local cluster: %v\n", err)
		code = 1
	}
	if err := CheckStopped(procs); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		code = 1
	}
	if forbidden, err := forbiddenRequests(e.Cluster.LogsDir()); err != nil || len(forbidden) > 0 {
		fmt.Fprintf(os.Stderr, "e2e: joinery's binaries were refused requests their roles (charts/joinery) should allow: %v\n%s\n", err, strings.Join(forbidden, "\n"))
		code = 1
	}
	if code == 0 {
		os.RemoveAll(dir)
	} else {
		fmt.Fprintf(os.Stderr, "e2e: component logs kept in %s\n", e.Cluster.LogsDir())
	}
	return code
}

// LocalOptions are the options of a local cluster with every component, in dir.
func LocalOptions(dir string) (localcluster.Options, error) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		return localcluster.Options{}, err
	}
	binDir, err := localcluster.DefaultBinDir()
	if err != nil {
		return localcluster.Options{}, err
	}
	return localcluster.Options{
		BinDir:        binDir,
		Dir:           dir,
		JoineryBinDir: filepath.Join(root, "bin"),
		CRDDir:        filepath.Join(root, "manifests", "crds"),
		// joinery's binaries run as the chart's ServiceAccounts: a permission the chart
		// lacks fails the suites.
		ChartDir:   filepath.Join(root, "charts", "joinery"),
		Components: localcluster.AllComponents,
	}, nil
}

func startLocal(options []Option) (*Env, string, error) {
	dir, err := os.MkdirTemp("", "joinery-e2e-")
	if err != nil {
		return nil, "", fmt.Errorf("create cluster dir: %w", err)
	}
	opts, err := LocalOptions(dir)
	if err != nil {
		return nil, "", err
	}
	for _, o := range options {
		o(&opts)
	}
	if testing.Verbose() {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	begin := time.Now()
	c, err := localcluster.Start(ctx, opts)
	if err != nil {
		return nil, "", fmt.Errorf("start the local cluster (`make tools build` builds its binaries): %w", err)
	}
	e, err := newEnv(c.RESTConfig())
	if err != nil {
		return nil, "", errors.Join(err, c.Stop())
	}
	e.Cluster, e.StartedIn = c, time.Since(begin)
	if url := c.AWSEmulatorURL(); url != "" {
		e.AWS = awsemulator.NewAdminClient(url)
	}
	return e, dir, nil
}

func connect(kubeconfig string) (*Env, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
	return newEnv(cfg)
}

func newEnv(cfg *rest.Config) (*Env, error) {
	cfg = rest.CopyConfig(cfg)
	// Tests create objects in bursts; the client's default rate limit would slow them down.
	cfg.QPS, cfg.Burst = 100, 200
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	return &Env{RESTConfig: cfg, Client: client, Dynamic: dyn}, nil
}

// StartLocal starts a local cluster of its own for a test that needs a fresh one (the live
// benchmark starts one per workload). stop stops it, checks no process outlived it and
// removes its directory unless keep is true.
func StartLocal(opts ...Option) (e *Env, stop func(keep bool) error, err error) {
	e, dir, err := startLocal(opts)
	if err != nil {
		return nil, nil, err
	}
	stop = func(keep bool) error {
		procs := e.Cluster.Processes()
		err := errors.Join(e.Cluster.Stop(), CheckStopped(procs))
		if err == nil && !keep {
			os.RemoveAll(dir)
		}
		return err
	}
	return e, stop, nil
}
