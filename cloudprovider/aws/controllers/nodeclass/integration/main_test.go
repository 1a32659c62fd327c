// Package integration runs the EC2NodeClass controller against a real etcd and kube-apiserver
// (the CRDs installed, finalizers and deletion as the API server applies them) and the AWS
// emulator, through the real SDK clients.
package integration

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/go-logr/logr"

	"github.com/joinery-dev/joinery/apis"
	awsv1 "github.com/joinery-dev/joinery/apis/aws/v1"
	ncctrl "github.com/joinery-dev/joinery/cloudprovider/aws/controllers/nodeclass"
	ncaws "github.com/joinery-dev/joinery/cloudprovider/aws/nodeclass"
	"github.com/joinery-dev/joinery/internal/awsemulator"
	"github.com/joinery-dev/joinery/internal/localcluster"
	"github.com/joinery-dev/joinery/internal/testcluster"
)

var cluster *localcluster.Cluster

func TestMain(m *testing.M) {
	os.Exit(testcluster.Main(m, &cluster, testcluster.Options{Name: "nodeclass-integration"}))
}

// testNow is when the resolver judges AMI deprecation and reservation expiry.
var testNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// env is one test's emulator, resolver and running controller.
type env struct {
	srv      *awsemulator.Server
	resolver *ncaws.Resolver
	client   client.Client
	version  string // the API server's Kubernetes version, as aliases see it
	// cleanedUp receives the name of each class the controller's OnDelete hook ran for.
	cleanedUp chan string
}

// start runs the controller in a manager of its own for the test. Short intervals let retries
// show within the test; the refreshes are long so that only failing classes are retried.
func start(t *testing.T) *env {
	t.Helper()
	return startWith(t, nil)
}

// startWith is start with edit applied to the controller's options; it gets the emulator's
// SDK configuration, e.g. to build the launch dry-runs.
func startWith(t *testing.T, edit func(cfg aws.Config, o *ncctrl.Options)) *env {
	t.Helper()
	srv := awsemulator.NewServer(awsemulator.Options{})
	t.Cleanup(srv.Close)
	cfg := srv.Config()
	cfg.Retryer = func() aws.Retryer { return noBackoff{retry.NewStandard()} }

	disc, err := discovery.NewDiscoveryClientForConfig(cluster.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	versionOf := ncaws.DiscoveryKubernetesVersion(disc)
	version, err := versionOf(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	resolver, err := ncaws.NewFromConfig(cfg, ncaws.Options{
		ClusterName: awsemulator.DefaultClusterName, Region: srv.Region,
		KubernetesVersion: versionOf, Clock: clocktesting.NewFakePassiveClock(testNow),
	})
	if err != nil {
		t.Fatal(err)
	}

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apis.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	logger := logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	log.SetLogger(logger)
	mgr, err := ctrl.NewManager(cluster.RESTConfig(), ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0", Logger: logger,
		// Every test runs its own manager with the same controller in one process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	cleanedUp := make(chan string, 16)
	opts := ncctrl.Options{
		AMIRefreshInterval: 10 * time.Minute, SubnetRefreshInterval: 10 * time.Minute,
		ResyncInterval: 10 * time.Minute, NotReadyInterval: time.Second, RetryInterval: 200 * time.Millisecond,
		DeletionPollInterval: 300 * time.Millisecond,
		OnDelete: func(_ context.Context, nc *awsv1.EC2NodeClass) error {
			cleanedUp <- nc.Name
			return nil
		},
	}
	if edit != nil {
		edit(cfg, &opts)
	}
	controller := ncctrl.New(mgr.GetClient(), resolver, mgr.GetEventRecorder("karpenter"), nil, opts)
	if err := controller.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	c, err := client.New(cluster.RESTConfig(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return &env{srv: srv, resolver: resolver, client: c, version: version, cleanedUp: cleanedUp}
}

// create creates the class and, when the test ends, deletes it and waits until it is gone
// (the controller is still running then, so the finalizer is honoured).
func (e *env) create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := e.client.Create(t.Context(), obj); err != nil {
		t.Fatalf("create %s: %v", obj.GetName(), err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			t.Errorf("delete %s: %v", obj.GetName(), err)
			return
		}
		if err := waitFor(ctx, func() (bool, error) {
			err := e.client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
			return client.IgnoreNotFound(err) == nil && err != nil, client.IgnoreNotFound(err)
		}); err != nil {
			t.Errorf("%s was not deleted: %v", obj.GetName(), err)
		}
	})
}

// waitForClass polls the class until cond holds.
func (e *env) waitForClass(t *testing.T, name string, what string, cond func(*awsv1.EC2NodeClass) bool) *awsv1.EC2NodeClass {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	nc := &awsv1.EC2NodeClass{}
	err := waitFor(ctx, func() (bool, error) {
		if err := e.client.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return cond(nc), nil
	})
	if err != nil {
		t.Fatalf("waiting for ec2nodeclass %s: %s: %v\nlast seen: %+v", name, what, err, nc.Status.Conditions)
	}
	return nc
}

// conditionIs reports whether the class has the condition with the status and reason.
func conditionIs(condType, status, reason string) func(*awsv1.EC2NodeClass) bool {
	return func(nc *awsv1.EC2NodeClass) bool {
		c := meta.FindStatusCondition(nc.Status.Conditions, condType)
		return c != nil && string(c.Status) == status && (reason == "" || c.Reason == reason)
	}
}

// events returns the events about the class, oldest first.
func (e *env) events(t *testing.T, name string) []eventsv1.Event {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := e.client.List(t.Context(), list); err != nil {
		t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, ev := range list.Items {
		if ev.Regarding.Kind == "EC2NodeClass" && ev.Regarding.Name == name {
			out = append(out, ev)
		}
	}
	return out
}

// waitTimeout bounds every wait: generous, since a loaded CI machine can take many seconds
// for a reconcile and its event.
const waitTimeout = 2 * time.Minute

// waitForEvent waits for an event about the class with the reason and returns it: events are
// written asynchronously, after the status the test saw.
func (e *env) waitForEvent(t *testing.T, name, reason string) eventsv1.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	var found *eventsv1.Event
	var reasons []string
	err := waitFor(ctx, func() (bool, error) {
		reasons = reasons[:0]
		for _, ev := range e.events(t, name) {
			reasons = append(reasons, ev.Reason)
			if ev.Reason == reason {
				found = &ev
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("waiting for a %s event about ec2nodeclass %s: %v (events: %v)", reason, name, err, reasons)
	}
	return *found
}

func waitFor(ctx context.Context, cond func() (bool, error)) error {
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// noBackoff keeps the SDK's retry decisions and attempt count but not its sleeps.
type noBackoff struct{ aws.Retryer }

func (noBackoff) RetryDelay(int, error) (time.Duration, error) { return 0, nil }
