// Command joinery-controller runs joinery's controllers (NodeClaim lifecycle, termination,
// disruption, node classes, buffers) in one controller-runtime manager with leader election,
// health probes and a Prometheus metrics endpoint.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/joinery-dev/joinery/apis"
	"github.com/joinery-dev/joinery/cloudprovider"
	"github.com/joinery-dev/joinery/cloudprovider/aws"
	"github.com/joinery-dev/joinery/cloudprovider/kwok"
	"github.com/joinery-dev/joinery/controller/disruption"
	"github.com/joinery-dev/joinery/controller/nodeclaim"
	"github.com/joinery-dev/joinery/controller/nodeclaim/garbagecollection"
	"github.com/joinery-dev/joinery/controller/nodeclaim/lifecycle"
	"github.com/joinery-dev/joinery/controller/nodepool"
	"github.com/joinery-dev/joinery/controller/state"
	"github.com/joinery-dev/joinery/internal/featuregates"
	"github.com/joinery-dev/joinery/internal/version"
)

type options struct {
	metricsAddr             string
	probeAddr               string
	leaderElect             bool
	leaderElectionNamespace string
	leaseDuration           time.Duration
	printVersion            bool
	cloudProvider           string
	registrationTTL         time.Duration
	initializationTTL       time.Duration
	gcInterval              time.Duration
	aws                     aws.Settings
	interruptionQueue       string
	featureGates            featuregates.Gates
	disruption              disruptionOptions
}

func main() {
	var opts options
	flag.StringVar(&opts.metricsAddr, "metrics-bind-address", ":8080", "address the Prometheus metrics endpoint binds to; \"0\" disables it")
	flag.StringVar(&opts.probeAddr, "health-probe-bind-address", ":8081", "address the /healthz and /readyz endpoints bind to")
	flag.BoolVar(&opts.leaderElect, "leader-elect", true, "elect a leader so that only one replica acts at a time")
	flag.StringVar(&opts.leaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election Lease and of the controller's ConfigMaps such as joinery-unavailable-offerings (default: the pod's namespace, or kube-system out of cluster)")
	flag.DurationVar(&opts.leaseDuration, "leader-election-lease-duration", 15*time.Second, "how long a leader's lease lasts before another replica may take over")
	flag.StringVar(&opts.cloudProvider, "cloud-provider", kwok.Name, "cloud provider that launches nodes: kwok or aws")
	flag.DurationVar(&opts.registrationTTL, "registration-ttl", lifecycle.DefaultRegistrationTTL, "how long after its creation a NodeClaim may wait for its node to register before it is deleted (the liveness TTL)")
	flag.DurationVar(&opts.initializationTTL, "initialization-ttl", lifecycle.DefaultInitializationTTL, "how long after registering a NodeClaim's node may take to initialize before the NodeClaim is deleted")
	flag.DurationVar(&opts.gcInterval, "gc-interval", garbagecollection.DefaultInterval, "how often instances without a NodeClaim, Nodes without a NodeClaim and NodeClaims without an instance are garbage-collected")
	flag.StringVar(&opts.interruptionQueue, "interruption-queue", os.Getenv("INTERRUPTION_QUEUE"), "aws: name of the SQS queue EventBridge forwards spot interruptions, scheduled changes and instance state changes to; empty disables interruption handling (env INTERRUPTION_QUEUE)")
	gates, err := featuregates.FromEnv(os.Getenv(featuregates.EnvVar))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	opts.featureGates = gates
	flag.Var(&featuregates.Value{Gates: &opts.featureGates}, featuregates.FlagName, "comma-separated Name=true|false feature gates, Karpenter's names: "+strings.Join(featuregates.Known(), ", ")+" (env "+featuregates.EnvVar+"; the flag wins)")
	flag.StringVar(&opts.disruption.schedulerConfig, "scheduler-config", "", "KubeSchedulerConfiguration file joinery-scheduler runs with; disruption simulates with its profile's plugins (default: kube-scheduler's default profile)")
	flag.StringVar(&opts.disruption.schedulerName, "scheduler-name", "joinery", "profile of --scheduler-config that disruption simulates with")
	flag.DurationVar(&opts.disruption.validationDelay, "disruption-validation-delay", disruption.DefaultValidationDelay, "how long a disruption command waits before it is checked against the cluster again and executed")
	flag.DurationVar(&opts.disruption.pollInterval, "disruption-poll-interval", disruption.DefaultPollInterval, "time between disruption passes that found nothing to do")
	repairToleration, err := envDuration("REPAIR_TOLERATION")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	flag.DurationVar(&opts.disruption.repairToleration, "repair-toleration", repairToleration, "with NodeRepair: replace every repair policy's toleration duration (tests and demonstrations only; 0 keeps the provider's policies; env REPAIR_TOLERATION)")
	flag.BoolVar(&opts.printVersion, "version", false, "print the version and exit")
	opts.aws.BindFlags(flag.CommandLine)
	zapOpts := zap.Options{Development: false} // JSON logs unless --zap-devel
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()

	if opts.printVersion {
		fmt.Println(version.String("joinery-controller"))
		return
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	if err := run(opts); err != nil {
		ctrl.Log.Error(err, "joinery-controller stopped")
		os.Exit(1)
	}
}

func run(opts options) error {
	log := ctrl.Log.WithName("setup")
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
	leaseDuration := opts.leaseDuration
	namespace := controllerNamespace(opts.leaderElectionNamespace)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: opts.metricsAddr},
		HealthProbeBindAddress:  opts.probeAddr,
		LeaderElection:          opts.leaderElect,
		LeaderElectionID:        "joinery-controller-leader",
		LeaderElectionNamespace: namespace,
		LeaseDuration:           &leaseDuration,
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("adding readiness check: %w", err)
	}

	ctx := ctrl.SetupSignalHandler()
	sim := newDisruptionSimulation(ctx, mgr, namespace, opts.disruption)
	cp, err := newCloudProvider(ctx, opts, mgr, namespace, sim)
	if err != nil {
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

	log.Info("starting", "version", version.Version, "kubernetes", version.KubernetesVersion(), "featureGates", opts.featureGates.String())
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}

// newCloudProvider builds the provider named by --cloud-provider on the manager, with whatever
// controllers and loops that provider needs beside the neutral controllers. The AWS provider's
// interruption controller pre-plans capacity on sim, the disruption controllers' simulation.
func newCloudProvider(ctx context.Context, opts options, mgr ctrl.Manager, namespace string, sim *disruptionSimulation) (cloudprovider.CloudProvider, error) {
	if opts.interruptionQueue != "" && opts.cloudProvider != aws.Name {
		return nil, errors.New("--interruption-queue needs --cloud-provider=aws")
	}
	switch opts.cloudProvider {
	case kwok.Name:
		cp, err := kwok.New(mgr.GetClient(), kwok.Options{})
		if err != nil {
			return nil, fmt.Errorf("creating the kwok cloud provider: %w", err)
		}
		return cp, nil
	case aws.Name:
		cp, err := aws.New(ctx, mgr, aws.Options{
			Settings:          opts.aws,
			Namespace:         namespace,
			InterruptionQueue: opts.interruptionQueue,
			// The same record the NodeClaim lifecycle controller writes and the scheduler plugin reads.
			Unavailable: state.NewUnavailableOfferings(mgr.GetClient(), mgr.GetAPIReader(), namespace, clock.RealClock{}),
			Recorder:    mgr.GetEventRecorder(nodeclaim.EventSource),
			Preplanner:  sim.preplanner,
		})
		if err != nil {
			return nil, fmt.Errorf("creating the aws cloud provider: %w", err)
		}
		return cp, nil
	default:
		return nil, fmt.Errorf("unknown --cloud-provider %q (known: %s, %s)", opts.cloudProvider, kwok.Name, aws.Name)
	}
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
