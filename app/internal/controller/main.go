// Package controller is joinery-controller: joinery's controllers (NodeClaim lifecycle,
// termination, disruption, node classes, buffers) in one controller-runtime manager with
// leader election, health probes and a Prometheus metrics endpoint.
package controller

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/joinery-dev/joinery/apis"
	"github.com/joinery-dev/joinery/app/internal/providers"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/aws"
	"github.com/joinery-dev/joinery/cloudprovider/kwok"
	"github.com/joinery-dev/joinery/controller/capacitybuffer"
	"github.com/joinery-dev/joinery/controller/disruption"
	clustermetrics "github.com/joinery-dev/joinery/controller/metrics"
	"github.com/joinery-dev/joinery/controller/nodeclaim"
	"github.com/joinery-dev/joinery/controller/nodeclaim/garbagecollection"
	"github.com/joinery-dev/joinery/controller/nodeclaim/lifecycle"
	"github.com/joinery-dev/joinery/controller/nodepool"
	"github.com/joinery-dev/joinery/controller/nodepool/static"
	"github.com/joinery-dev/joinery/controller/state"
	"github.com/joinery-dev/joinery/internal/eventlimit"
	"github.com/joinery-dev/joinery/internal/featuregates"
	"github.com/joinery-dev/joinery/internal/settings"
	"github.com/joinery-dev/joinery/internal/version"
	"github.com/joinery-dev/joinery/plugin"
	"github.com/joinery-dev/joinery/simulation/solver"
)

type options struct {
	metricsAddr             string
	metricsSecure           bool
	probeAddr               string
	leaderElect             bool
	leaderElectionNamespace string
	leaderElectionName      string
	leaseDuration           time.Duration
	kubeClientQPS           float64
	kubeClientBurst         int
	logLevel                string
	printVersion            bool
	cloudProvider           string
	registrationTTL         time.Duration
	initializationTTL       time.Duration
	gcInterval              time.Duration
	aws                     aws.Settings
	interruptionQueue       string
	featureGates            featuregates.Gates
	disruption              disruptionOptions
	output                  outputOptions
}

// Main runs joinery-controller with the command line args (without the program name), its
// disruption simulation running outOfTree's scheduler plugins beside the in-tree ones. It
// returns only when --version printed the version; otherwise it ends the process, with status
// 2 on an invalid setting or flag and 1 when the controller stops.
func Main(args []string, outOfTree frameworkruntime.Registry) {
	var opts options
	opts.disruption.outOfTree = outOfTree
	// Karpenter's settings from the environment are the flags' defaults (a flag given on the
	// command line wins); an invalid one stops the controller here, named.
	env, err := settings.FromEnv(os.LookupEnv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "invalid settings:", err)
		os.Exit(2)
	}
	flag.StringVar(&opts.metricsAddr, "metrics-bind-address", portAddress(env.MetricsPort, 8080), "address the Prometheus metrics endpoint binds to; \"0\" disables it (env METRICS_PORT sets the port)")
	flag.StringVar(&opts.probeAddr, "health-probe-bind-address", portAddress(env.HealthProbePort, 8081), "address the /healthz and /readyz endpoints bind to (env HEALTH_PROBE_PORT sets the port)")
	flag.BoolVar(&opts.leaderElect, "leader-elect", env.DisableLeaderElection == nil || !*env.DisableLeaderElection, "elect a leader so that only one replica acts at a time (env DISABLE_LEADER_ELECTION=true turns it off)")
	flag.StringVar(&opts.leaderElectionNamespace, "leader-election-namespace", deref(env.LeaderElectionNamespace, ""), "namespace of the leader election Lease and of the controller's ConfigMaps such as joinery-unavailable-offerings (default: the pod's namespace, or kube-system out of cluster; env LEADER_ELECTION_NAMESPACE)")
	flag.StringVar(&opts.leaderElectionName, "leader-election-name", deref(env.LeaderElectionName, "joinery-controller-leader"), "name of the leader election Lease (env LEADER_ELECTION_NAME)")
	flag.Float64Var(&opts.kubeClientQPS, "kube-client-qps", float64(deref(env.KubeClientQPS, 200)), "the smoothed rate of queries to the kube-apiserver (env KUBE_CLIENT_QPS)")
	flag.IntVar(&opts.kubeClientBurst, "kube-client-burst", deref(env.KubeClientBurst, 300), "the maximum burst of queries to the kube-apiserver (env KUBE_CLIENT_BURST)")
	flag.StringVar(&opts.logLevel, "log-level", deref(env.LogLevel, "info"), "log verbosity: debug, info or error (env LOG_LEVEL; --zap-log-level, when given, wins)")
	flag.DurationVar(&opts.leaseDuration, "leader-election-lease-duration", 15*time.Second, "how long a leader's lease lasts before another replica may take over")
	flag.StringVar(&opts.cloudProvider, "cloud-provider", kwok.Name, "cloud provider that launches nodes: kwok or aws")
	flag.DurationVar(&opts.registrationTTL, "registration-ttl", lifecycle.DefaultRegistrationTTL, "how long after its creation a NodeClaim may wait for its node to register before it is deleted (the liveness TTL)")
	flag.DurationVar(&opts.initializationTTL, "initialization-ttl", 0, fmt.Sprintf("how long after registering a NodeClaim's node may take to initialize before the NodeClaim is deleted; 0 (the default, as Karpenter) never deletes it for that, e.g. %s opts in", lifecycle.SuggestedInitializationTTL))
	flag.DurationVar(&opts.gcInterval, "gc-interval", garbagecollection.DefaultInterval, "how often instances without a NodeClaim, Nodes without a NodeClaim and NodeClaims without an instance are garbage-collected")
	flag.StringVar(&opts.interruptionQueue, "interruption-queue", os.Getenv("INTERRUPTION_QUEUE"), "aws: name of the SQS queue EventBridge forwards spot interruptions, scheduled changes and instance state changes to; empty disables interruption handling (env INTERRUPTION_QUEUE)")
	gates, err := featuregates.NewValue(os.Getenv(featuregates.EnvVar))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	flag.Var(gates, featuregates.FlagName, featuregates.Usage())
	flag.StringVar(&opts.disruption.schedulerConfig, "scheduler-config", "", "KubeSchedulerConfiguration file joinery-scheduler runs with; disruption simulates with its profile's plugins (default: kube-scheduler's default profile)")
	flag.StringVar(&opts.disruption.schedulerName, "scheduler-name", "joinery", "profile of --scheduler-config that disruption simulates with")
	// The simulation plans with the Provisioner args of --scheduler-config's profile, as
	// joinery-scheduler does, with the environment's policy settings applied over them as
	// joinery-scheduler applies them; these flags, when given, override both.
	opts.disruption.overrides = plugin.ArgOverrides{PreferencePolicy: env.PreferencePolicy, MinValuesPolicy: env.MinValuesPolicy, IgnoreDRARequests: env.IgnoreDRARequests}
	flag.Var(override[solver.PreferencePolicy]{&opts.disruption.overrides.PreferencePolicy}, "preference-policy", "override of the profile's Provisioner preferencePolicy for disruption's simulation: Respect or Ignore (default: --scheduler-config's, then env PREFERENCE_POLICY)")
	flag.Var(override[solver.MinValuesPolicy]{&opts.disruption.overrides.MinValuesPolicy}, "min-values-policy", "override of the profile's Provisioner minValuesPolicy for disruption's simulation and static NodePools: Strict or BestEffort (default: --scheduler-config's, then env MIN_VALUES_POLICY)")
	flag.Var(boolOverride{&opts.disruption.overrides.IgnoreDRARequests}, "ignore-dra-requests", "override of the profile's Provisioner ignoreDRARequests for disruption's simulation (default: --scheduler-config's, then env IGNORE_DRA_REQUESTS)")
	flag.DurationVar(&opts.disruption.validationDelay, "disruption-validation-delay", disruption.DefaultValidationDelay, "how long a disruption command waits before it is checked against the cluster again and executed")
	consolidationDelay, err := envDuration("CONSOLIDATION_VALIDATION_DELAY")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if consolidationDelay == 0 {
		consolidationDelay = disruption.DefaultConsolidationValidationDelay
	}
	flag.DurationVar(&opts.disruption.consolidationValidationDelay, "consolidation-validation-delay", consolidationDelay, "how long a consolidation command (emptiness, multi- and single-node) waits before it is checked against the cluster again and executed (env CONSOLIDATION_VALIDATION_DELAY)")
	flag.DurationVar(&opts.disruption.pollInterval, "disruption-poll-interval", disruption.DefaultPollInterval, "time between disruption passes that found nothing to do")
	repairToleration, err := envDuration("REPAIR_TOLERATION")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	flag.DurationVar(&opts.disruption.repairToleration, "repair-toleration", repairToleration, "with NodeRepair: replace every repair policy's toleration duration (tests and demonstrations only; 0 keeps the provider's policies; env REPAIR_TOLERATION)")
	flag.BoolVar(&opts.printVersion, "version", false, "print the version and exit")
	flag.BoolVar(&opts.metricsSecure, "metrics-secure", false, "serve metrics over HTTPS to clients the API server authenticates (TokenReview) and authorizes for get on /metrics (SubjectAccessReview); the chart turns it on")
	opts.aws.BindFlags(flag.CommandLine)
	bindNodeClassFlags(flag.CommandLine, &opts.aws, env)
	opts.output.bind(flag.CommandLine, env)
	zapOpts := zap.Options{Development: false} // JSON logs unless --zap-devel
	zapOpts.BindFlags(flag.CommandLine)
	_ = flag.CommandLine.Parse(args) // flag.ExitOnError: a bad flag exits with status 2
	opts.featureGates = gates.Get()

	if opts.printVersion {
		fmt.Println(version.String("joinery-controller"))
		return
	}
	if err := opts.output.openLogSinks(&zapOpts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	logger, err := newLogger(opts.logLevel, &zapOpts, flagGiven("zap-log-level"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctrl.SetLogger(logger)
	if changed := env.ApplyRuntime(os.LookupEnv); len(changed) > 0 {
		ctrl.Log.WithName("setup").Info("sized the Go runtime from the container's settings", changed...)
	}
	if err := run(opts); err != nil {
		ctrl.Log.Error(err, "joinery-controller stopped")
		os.Exit(1)
	}
}

func run(opts options) error {
	log := ctrl.Log.WithName("setup")
	// A scheduler profile the simulation cannot run stops the controller before it acts.
	engine, err := opts.disruption.loadEngine()
	if err != nil {
		return err
	}
	opts.disruption.engine = engine
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return fmt.Errorf("registering Kubernetes types: %w", err)
	}
	if err := apis.AddToScheme(scheme); err != nil {
		return fmt.Errorf("registering joinery types: %w", err)
	}

	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = float32(opts.kubeClientQPS), opts.kubeClientBurst
	leaseDuration := opts.leaseDuration
	namespace := controllerNamespace(opts.leaderElectionNamespace)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsOptions(opts),
		HealthProbeBindAddress:  opts.probeAddr,
		LeaderElection:          opts.leaderElect,
		LeaderElectionID:        opts.leaderElectionName,
		LeaderElectionNamespace: namespace,
		LeaseDuration:           &leaseDuration,
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	mgr = limitedEvents{mgr}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("adding readiness check: %w", err)
	}

	ctx := ctrl.SetupSignalHandler()
	sim := newDisruptionSimulation(ctx, mgr, namespace, opts.disruption)
	overlays := nodeOverlays(opts.featureGates)
	cp, err := newCloudProvider(ctx, opts, mgr, namespace, sim, overlayOf(overlays))
	if err != nil {
		return err
	}
	if err := setupNodeOverlays(ctx, mgr, cp, overlays); err != nil {
		return err
	}
	if err := nodeclaim.Setup(ctx, mgr, cp, nodeclaim.Options{Namespace: namespace, RegistrationTTL: opts.registrationTTL, InitializationTTL: opts.initializationTTL, GCInterval: opts.gcInterval}); err != nil {
		return err
	}
	if err := setupCost(mgr, cp); err != nil {
		return err
	}
	nodePools, err := nodepool.New(mgr.GetClient(), cp.GetSupportedNodeClasses(), nil)
	if err != nil {
		return fmt.Errorf("creating %s: %w", nodepool.Name, err)
	}
	if err := setupDisruption(mgr, cp, sim, opts.featureGates); err != nil {
		return err
	}
	if err := nodePools.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up %s: %w", nodepool.Name, err)
	}
	// The static controller runs whatever the gate: with StaticCapacity off it only warns that
	// a NodePool's replicas are not acted on.
	staticPools := static.New(mgr.GetClient(), cp, mgr.GetEventRecorder(static.Name), static.Options{
		Enabled: opts.featureGates.Enabled(featuregates.StaticCapacity),
		Solver:  solver.Options{}.WithPolicies(engine.Args.Policies()),
	})
	if err := staticPools.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up %s: %w", static.Name, err)
	}
	if err := setupMetrics(mgr); err != nil {
		return err
	}
	if opts.featureGates.Enabled(featuregates.CapacityBuffer) {
		buffers := capacitybuffer.New(mgr.GetClient(), mgr.GetEventRecorder(capacitybuffer.Name), nil)
		if err := buffers.SetupWithManager(ctx, mgr); err != nil {
			return fmt.Errorf("setting up %s: %w", capacitybuffer.Name, err)
		}
	}

	log.Info("starting", "version", version.Version, "kubernetes", version.KubernetesVersion(), "featureGates", opts.featureGates.String())
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}

// limitedEvents is the manager with every recorder it hands out deduplicating and
// rate-limiting its events (internal/eventlimit), so a node that cannot drain or a NodeClaim
// that keeps failing to launch does not flood the API server.
type limitedEvents struct{ ctrl.Manager }

func (m limitedEvents) GetEventRecorder(name string) events.EventRecorder {
	return eventlimit.Wrap(m.Manager.GetEventRecorder(name))
}

// setupMetrics adds the controllers that keep Karpenter's gauges of cluster state, and
// karpenter_build_info, to the metrics endpoint.
func setupMetrics(mgr ctrl.Manager) error {
	crmetrics.Registry.MustRegister(version.BuildInfo)
	if err := clustermetrics.NewPodController(mgr.GetClient(), nil).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up %s: %w", clustermetrics.PodControllerName, err)
	}
	state := clustermetrics.New(mgr.GetClient(), mgr.GetAPIReader(), nil, 0)
	if err := mgr.Add(state); err != nil {
		return fmt.Errorf("setting up %s: %w", clustermetrics.Name, err)
	}
	return nil
}

// newCloudProvider builds the provider named by --cloud-provider on the manager, with whatever
// controllers and loops that provider needs beside the neutral controllers. The AWS provider's
// interruption controller pre-plans capacity on sim, the disruption controllers' simulation.
// overlay (NodeOverlay; nil when the gate is off) adjusts the provider's catalog for every
// reader: provisioning replacements, consolidation's prices, launches.
func newCloudProvider(ctx context.Context, opts options, mgr ctrl.Manager, namespace string, sim *disruptionSimulation, overlay cloudprovider.Overlay) (cloudprovider.CloudProvider, error) {
	if opts.interruptionQueue != "" && opts.cloudProvider != aws.Name {
		return nil, errors.New("--interruption-queue needs --cloud-provider=aws")
	}
	return providers.Choose(opts.cloudProvider, providers.Builders[cloudprovider.CloudProvider]{
		Kwok: func() (cloudprovider.CloudProvider, error) {
			cp, err := kwok.New(mgr.GetClient(), kwok.Options{
				Overlay:                 overlay,
				DisableReservedCapacity: !opts.featureGates.Enabled(featuregates.ReservedCapacity),
				// Offerings recorded exhausted do not launch, as on a real cloud.
				Unavailable: state.NewUnavailableOfferings(mgr.GetClient(), mgr.GetAPIReader(), namespace, clock.RealClock{}),
			})
			if err != nil {
				return nil, fmt.Errorf("creating the kwok cloud provider: %w", err)
			}
			return cp, nil
		},
		AWS: func() (cloudprovider.CloudProvider, error) {
			settings := opts.aws
			settings.DisableReservedCapacity = !opts.featureGates.Enabled(featuregates.ReservedCapacity)
			cp, err := aws.New(ctx, mgr, aws.Options{
				Settings:          settings,
				Namespace:         namespace,
				InterruptionQueue: opts.interruptionQueue,
				// The same record the NodeClaim lifecycle controller writes and the scheduler plugin reads.
				Unavailable: state.NewUnavailableOfferings(mgr.GetClient(), mgr.GetAPIReader(), namespace, clock.RealClock{}),
				Recorder:    mgr.GetEventRecorder(nodeclaim.EventSource),
				Preplanner:  sim.preplanner,
				Overlay:     overlay,
			})
			if err != nil {
				return nil, fmt.Errorf("creating the aws cloud provider: %w", err)
			}
			return cp, nil
		},
	})
}

// metricsOptions serves plain HTTP, for a bind address only the host reaches (the local
// cluster's loopback), or with --metrics-secure HTTPS behind the API server's authentication
// and authorization, as kube-scheduler serves joinery-scheduler's metrics.
func metricsOptions(opts options) metricsserver.Options {
	m := metricsserver.Options{BindAddress: opts.metricsAddr, ExtraHandlers: opts.output.extraHandlers()}
	if opts.metricsSecure {
		m.SecureServing = true
		m.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return m
}

// controllerNamespace is where the controller keeps its Lease and ConfigMaps: the
// --leader-election-namespace flag, then the namespace the pod runs in (in-cluster), then
// kube-system, so a binary run by hand against a cluster still works.
func controllerNamespace(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	if ns, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil && len(ns) > 0 {
		return string(ns)
	}
	return "kube-system"
}

// portAddress is ":port" for a port setting, or ":def" when it is unset.
func portAddress(port *int, def int) string {
	return fmt.Sprintf(":%d", deref(port, def))
}

// deref is *p, or def when p is nil (a setting left unset).
func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// flagGiven reports whether the command line set the flag name.
func flagGiven(name string) bool {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// envDuration reads a duration from the environment variable name; unset is zero.
func envDuration(name string) (time.Duration, error) {
	v := os.Getenv(name)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return d, nil
}
