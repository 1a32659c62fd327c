package localcluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

// Options configures a local cluster.
type Options struct {
	// BinDir holds the component binaries (etcd, kube-apiserver, ...), e.g. .local/bin.
	BinDir string
	// Dir is the root of the cluster's data, certificates and logs, e.g. .local/cluster.
	// Two clusters running side by side need different Dirs.
	Dir string
	// KeepData leaves etcd's data, the certificates and the kubeconfig in Dir after Stop.
	// Logs are always kept.
	KeepData bool
	// Logger receives progress messages; nil discards them.
	Logger *slog.Logger

	// Components run beyond etcd and kube-apiserver, e.g. AllComponents. Empty: the control
	// plane only, which is what API-level integration tests need.
	Components []Component
	// JoineryBinDir holds joinery-scheduler and joinery-controller (`make build` writes bin/).
	// Required when Components names either of them.
	JoineryBinDir string
	// LogsDir holds one <component>.log per component; default Dir/logs.
	LogsDir string
	// KubeconfigPath is where the admin kubeconfig is written; default Dir/admin.kubeconfig.
	KubeconfigPath string
	// CRDDir, when set, holds CRDs installed once kube-apiserver is ready and before the other
	// components start, so joinery's binaries find their APIs served.
	CRDDir string
	// SecondaryScheduler makes joinery-scheduler serve only the `joinery` profile and leave
	// `default-scheduler` to another scheduler. By default it serves both, since no other
	// scheduler runs on the local cluster.
	SecondaryScheduler bool
	// PlainScheduler runs joinery-scheduler without its provisioning plugin: kube-scheduler's
	// own plugins only, as a cluster without joinery has them. The live benchmark's baseline
	// measures the scheduler's cost of a scale-up with it, the NodeClaims made by the benchmark.
	PlainScheduler bool
	// ChartDir, when set, is joinery's Helm chart (charts/joinery): joinery-scheduler and
	// joinery-controller then run in ControllerNamespace as the ServiceAccounts, and with the
	// roles, the chart renders for CloudProvider. Empty: they run as the admin, in kube-system.
	ChartDir string
	// SchedulerPlugins are out-of-tree scheduler plugins every profile of joinery-scheduler's
	// configuration enables, with their args; JoineryBinDir's binaries must register them
	// (app.WithPlugin). joinery-controller then simulates with the same configuration
	// (--scheduler-config).
	SchedulerPlugins []SchedulerPlugin
	// CloudProvider is joinery's cloud provider: CloudProviderKwok (the default) or
	// CloudProviderAWS, which needs AWSEmulator among the Components (see AWSComponents) and
	// points joinery-controller and joinery-scheduler at it.
	CloudProvider string
}

// serviceCIDR is the cluster's service IP range: only a configuration value here, since
// nothing routes service IPs on the local cluster. Its first address is the `kubernetes`
// service, which the serving certificate must name.
const serviceCIDR = "10.0.0.0/24"

var firstServiceIP = net.ParseIP("10.0.0.1")

// portAttempts bounds retries of a component that lost the race for a free port.
const portAttempts = 3

// Cluster is a running local control plane.
type Cluster struct {
	opts    Options
	log     *slog.Logger
	lock    *os.File
	certs   *pki
	dataDir string

	kubeconfigPath string
	restConfig     *rest.Config

	etcdClientPort, etcdPeerPort int
	apiserverPort                int

	kcmPort                       int
	kwokPort                      int
	awsEmulatorPort               int
	schedulerPort                 int
	schedulerReadinessPort        int
	controllerMetricsPort         int
	controllerProbePort           int
	controllerManagerDir, kwokDir string
	schedulerDir                  string
	// kubeconfigs are joinery's binaries' own, with Options.ChartDir (identities.go).
	kubeconfigs map[Component]string

	mu        sync.Mutex // guards processes while components start in parallel
	processes []*process // in start order; stopped in reverse

	stopping atomic.Bool
	crashed  chan error

	stopOnce sync.Once
	stopErr  error
	// stopEBSCSI stops the EBS CSI stand-in (ebscsi.go), when it runs.
	stopEBSCSI context.CancelFunc
	// stopDRADriver stops the DRA driver stand-in (dradriver.go), when it runs.
	stopDRADriver context.CancelFunc
}

// component is one control-plane process: how to configure it and how to tell it serves.
type component struct {
	name string
	// configure picks the component's ports and returns its command-line arguments. It runs
	// again when the component lost the race for a port.
	configure func() ([]string, error)
	// ready returns nil once the component serves requests.
	ready func(ctx context.Context) error
	// ports lists the ports configure picked, so callers can check they are freed.
	ports func() []int
	// binDir overrides Options.BinDir for joinery's own binaries.
	binDir string
	// env is added to the component's environment.
	env []string
}

// Start brings up the control plane in opts.Dir and returns once every component is ready.
// ctx bounds only the start-up; the processes run until Stop. On error, whatever was started
// is stopped again.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.BinDir == "" || opts.Dir == "" {
		return nil, errors.New("localcluster: Options.BinDir and Options.Dir are required")
	}
	var err error
	if opts.BinDir, err = filepath.Abs(opts.BinDir); err != nil {
		return nil, fmt.Errorf("resolve BinDir: %w", err)
	}
	if opts.Dir, err = filepath.Abs(opts.Dir); err != nil {
		return nil, fmt.Errorf("resolve Dir: %w", err)
	}
	if opts.JoineryBinDir != "" {
		if opts.JoineryBinDir, err = filepath.Abs(opts.JoineryBinDir); err != nil {
			return nil, fmt.Errorf("resolve JoineryBinDir: %w", err)
		}
	}
	if opts.ChartDir != "" {
		if opts.ChartDir, err = filepath.Abs(opts.ChartDir); err != nil {
			return nil, fmt.Errorf("resolve ChartDir: %w", err)
		}
	}
	if opts.LogsDir != "" {
		if opts.LogsDir, err = filepath.Abs(opts.LogsDir); err != nil {
			return nil, fmt.Errorf("resolve LogsDir: %w", err)
		}
	}
	kubeconfigPath := filepath.Join(opts.Dir, "admin.kubeconfig")
	if opts.KubeconfigPath != "" {
		if kubeconfigPath, err = filepath.Abs(opts.KubeconfigPath); err != nil {
			return nil, fmt.Errorf("resolve KubeconfigPath: %w", err)
		}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if err := CheckBinaries(opts.BinDir); err != nil {
		return nil, err
	}
	if err := checkComponentBinaries(opts); err != nil {
		return nil, err
	}

	c := &Cluster{
		opts:           opts,
		log:            opts.Logger,
		dataDir:        filepath.Join(opts.Dir, "etcd"),
		kubeconfigPath: kubeconfigPath,
		crashed:        make(chan error, 1),
	}
	for _, dir := range []string{opts.Dir, c.LogsDir()} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("create cluster dir: %w", err)
		}
	}
	if err := c.acquireDir(); err != nil {
		return nil, err
	}
	if c.certs, err = generatePKI(c.pkiDir(), firstServiceIP); err != nil {
		c.releaseDir()
		return nil, fmt.Errorf("generate certificates: %w", err)
	}

	begin := time.Now()
	if err := c.startAll(ctx); err != nil {
		if stopErr := c.Stop(); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("stop after failed start: %w", stopErr))
		}
		return nil, err
	}
	c.watchForCrashes()
	if slices.Contains(opts.Components, Kwok) {
		if err := c.startEBSCSI(); err != nil {
			return nil, errors.Join(err, c.Stop())
		}
		if err := c.startDRADriver(); err != nil {
			return nil, errors.Join(err, c.Stop())
		}
	}
	c.log.Info("local cluster ready", "dir", opts.Dir, "server", c.restConfig.Host, "took", time.Since(begin).Round(time.Millisecond))
	return c, nil
}

// startAll starts etcd and kube-apiserver one after the other, installs the CRDs, then starts
// the remaining components side by side: they depend only on the API server, and starting
// them in parallel keeps start-to-ready short on a small machine.
func (c *Cluster) startAll(ctx context.Context) error {
	for _, comp := range []component{c.etcd(), c.kubeAPIServer()} {
		if err := c.startComponent(ctx, comp); err != nil {
			return err
		}
	}
	if c.opts.CRDDir != "" {
		if err := c.InstallCRDs(ctx, c.opts.CRDDir); err != nil {
			return err
		}
	}
	if c.opts.ChartDir != "" && c.runsJoinery() {
		if err := c.installIdentities(ctx); err != nil {
			return err
		}
	}
	comps, err := c.extraComponents()
	if err != nil {
		return err
	}
	// joinery's binaries talk to the AWS emulator from their first reconcile; start it first.
	if i := slices.IndexFunc(comps, func(comp component) bool { return comp.name == string(AWSEmulator) }); i >= 0 {
		if err := c.startComponent(ctx, comps[i]); err != nil {
			return err
		}
		comps = slices.Delete(comps, i, i+1)
	}
	errs := make([]error, len(comps))
	var wg sync.WaitGroup
	for i, comp := range comps {
		wg.Go(func() { errs[i] = c.startComponent(ctx, comp) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// startComponent starts comp and waits until it is ready, retrying with fresh ports when it
// lost the race for one.
func (c *Cluster) startComponent(ctx context.Context, comp component) error {
	binDir := c.opts.BinDir
	if comp.binDir != "" {
		binDir = comp.binDir
	}
	binary := filepath.Join(binDir, comp.name)
	logPath := filepath.Join(c.LogsDir(), comp.name+".log")
	for attempt := 1; ; attempt++ {
		args, err := comp.configure()
		if err != nil {
			return fmt.Errorf("configure %s: %w", comp.name, err)
		}
		begin := time.Now()
		p, err := startProcess(comp.name, binary, args, logPath, comp.env...)
		if err != nil {
			return err
		}
		if comp.ports != nil {
			p.ports = comp.ports()
		}
		err = p.waitReady(ctx, comp.ready)
		if err == nil {
			c.mu.Lock()
			c.processes = append(c.processes, p)
			c.mu.Unlock()
			c.log.Info("component ready", "component", comp.name, "pid", p.pid(), "took", time.Since(begin).Round(time.Millisecond), "log", logPath)
			return nil
		}
		crashed := p.hasExited()
		if stopErr := p.stop(); stopErr != nil {
			return errors.Join(err, stopErr)
		}
		if crashed && attempt < portAttempts && isAddressInUse(p.logTail()) {
			c.log.Info("component lost a port race; retrying with new ports", "component", comp.name, "attempt", attempt)
			continue
		}
		return err
	}
}

// Stop stops every component (the last started first), waits until each has exited, and
// removes the cluster's data unless Options.KeepData. Calling it again returns the first result.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		c.stopping.Store(true)
		if c.stopEBSCSI != nil {
			c.stopEBSCSI()
		}
		if c.stopDRADriver != nil {
			c.stopDRADriver()
		}
		var errs []error
		for i := len(c.processes) - 1; i >= 0; i-- {
			p := c.processes[i]
			begin := time.Now()
			if err := p.stop(); err != nil {
				errs = append(errs, err)
				continue
			}
			c.log.Info("component stopped", "component", p.name, "pid", p.pid(), "took", time.Since(begin).Round(time.Millisecond))
		}
		if !c.opts.KeepData {
			for _, path := range []string{c.dataDir, c.pkiDir(), c.apiserverCertDir(), c.kubeconfigPath,
				c.controllerManagerDir, c.kwokDir, c.schedulerDir, c.identitiesDir()} {
				if path == "" {
					continue // a component that did not run
				}
				if err := os.RemoveAll(path); err != nil {
					errs = append(errs, fmt.Errorf("remove cluster data: %w", err))
				}
			}
		}
		c.releaseDir()
		c.stopErr = errors.Join(errs...)
	})
	return c.stopErr
}

// RESTConfig returns a copy of the admin client configuration.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.restConfig) }

// KubeconfigPath is the admin kubeconfig file, for kubectl and out-of-process components.
func (c *Cluster) KubeconfigPath() string { return c.kubeconfigPath }

// ControllerMetricsURL is where joinery-controller serves its Prometheus metrics.
func (c *Cluster) ControllerMetricsURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d/metrics", c.controllerMetricsPort)
}

// SchedulerMetricsURL is where joinery-scheduler serves its Prometheus metrics: kube-scheduler's
// secure port, which authenticates and authorizes the caller (the admin kubeconfig's identity
// may read it).
func (c *Cluster) SchedulerMetricsURL() string {
	return fmt.Sprintf("https://127.0.0.1:%d/metrics", c.schedulerPort)
}

// LogsDir holds one <component>.log per component.
func (c *Cluster) LogsDir() string {
	if c.opts.LogsDir != "" {
		return c.opts.LogsDir
	}
	return filepath.Join(c.opts.Dir, "logs")
}

func (c *Cluster) pkiDir() string { return filepath.Join(c.opts.Dir, "pki") }

// apiserverCertDir is kube-apiserver's --cert-dir.
func (c *Cluster) apiserverCertDir() string { return filepath.Join(c.opts.Dir, "apiserver") }

// acquireDir takes an exclusive lock on Dir so a second cluster cannot share its data and
// ports by mistake.
func (c *Cluster) acquireDir() error {
	path := filepath.Join(c.opts.Dir, ".lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return fmt.Errorf("cluster dir %s is in use by another local cluster: %w", c.opts.Dir, err)
	}
	c.lock = f
	return nil
}

// releaseDir drops the lock taken by acquireDir.
func (c *Cluster) releaseDir() {
	if c.lock != nil {
		c.lock.Close() // closing the descriptor releases the flock
		c.lock = nil
	}
}
